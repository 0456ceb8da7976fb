package raftnode

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestIdleAnswersParkUntilAChange: once raft runs, an idle repeat to a
// non-voter answered from memory is held until something changes (or the
// node stops); a repeat already behind raft's commit or last index is
// answered at once; after stop nothing parks.
func TestIdleAnswersParkUntilAChange(t *testing.T) {
	f := startFollower(t)
	tr := newLeaderTransport(t, time.Hour) // park: half an hour
	isVoter := func(raft.ServerID) bool { return false }
	tr.voter.Store(&isVoter)
	commit, last := uint64(10), uint64(10)
	state := func() (uint64, uint64) { return commit, last }
	tr.idle.state.Store(&state)

	idle := raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 10, PrevLogTerm: 2, LeaderCommitIndex: 10}
	send := func() <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			var resp raft.AppendEntriesResponse
			if err := tr.AppendEntries("f", f.trans.LocalAddr(), &idle, &resp); err != nil || !resp.Success {
				t.Errorf("idle repeat: %v, %+v", err, resp)
			}
		}()
		return done
	}
	waitDone := func(what string, done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the answer did not come", what)
		}
	}
	waitDone("the first request (sent)", send())

	// waitParked polls until one answer is parked.
	waitParked := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for tr.idle.parked.Load() != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the repeat did not park")
			}
			time.Sleep(time.Millisecond)
		}
	}
	parked := send()
	waitParked()
	select {
	case <-parked:
		t.Fatal("a parked answer returned before any change")
	default:
	}
	tr.idle.changed()
	waitDone("a parked repeat after a change", parked)

	commit = 11 // raft committed since it built the request
	waitDone("a repeat behind the commit index", send())
	commit, last = 10, 12 // raft stored entries since
	waitDone("a repeat behind the last index", send())

	last = 10
	parked = send()
	waitParked()
	tr.idle.stop()
	waitDone("a parked repeat at stop", parked)
	waitDone("a repeat after stop", send())
}

// TestWakingStoresPassOnMonotonic: the log store wrapper that wakes parked
// answers keeps telling raft whether the store is monotonic.
func TestWakingStoresPassOnMonotonic(t *testing.T) {
	st := openTestStores(t, t.TempDir())
	defer st.closer.Close()
	var woken int
	w := wakingLogs{LogStore: st.logs, changed: func() { woken++ }}
	if !w.IsMonotonic() {
		t.Fatal("the write-ahead log behind the wrapper is not monotonic")
	}
	if err := w.StoreLogs(testLogs(1, 3)); err != nil || woken != 1 {
		t.Fatalf("StoreLogs: %v, woken %d times", err, woken)
	}
	if (wakingLogs{LogStore: raft.NewInmemStore()}).IsMonotonic() {
		t.Fatal("the in-memory store behind the wrapper is monotonic")
	}
}
