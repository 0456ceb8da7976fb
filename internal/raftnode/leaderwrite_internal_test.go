package raftnode

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// fakeDisk is a deferredLog whose durable index the test sets; fail makes
// every wait fail as a failed deferred sync does.
type fakeDisk struct {
	durable uint64
	fail    bool
}

func (d *fakeDisk) Durable() uint64     { return d.durable }
func (d *fakeDisk) SyncDeferred() error { return nil }
func (d *fakeDisk) WaitDurable(index uint64, stop <-chan struct{}) error {
	if d.fail {
		return walog.ErrNotDurable
	}
	<-stop
	return walog.ErrClosed
}

// TestAppendEntriesCarriesOnlyASyncedCommit: a follower is never told of
// a commit past what the leader has on disk, and raft's request keeps its
// own commit index.
func TestAppendEntriesCarriesOnlyASyncedCommit(t *testing.T) {
	f, tr, voters := startVoterRig(t)
	const id = raft.ServerID("f")
	voters[id] = true
	disk := &fakeDisk{durable: 5}
	tr.writes = &leaderWrites{log: disk}
	for _, tc := range []struct{ durable, commit, want uint64 }{{5, 9, 5}, {9, 9, 9}, {12, 9, 9}} {
		disk.durable = tc.durable
		req := raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 9, PrevLogTerm: 3, LeaderCommitIndex: tc.commit,
			Entries: []*raft.Log{{Index: 10, Term: 3}}}
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries(id, f.trans.LocalAddr(), &req, &resp); err != nil {
			t.Fatal(err)
		}
		if got := f.commit.Load(); got != tc.want {
			t.Errorf("commit %d with %d on disk: the follower was told %d, want %d", tc.commit, tc.durable, got, tc.want)
		}
		if req.LeaderCommitIndex != tc.commit {
			t.Errorf("raft's request now says commit %d, want %d", req.LeaderCommitIndex, tc.commit)
		}
	}
}

// TestGateSyncsADeferredAppend: an entry whose append deferred its sync
// reaches the state machine once synced, by the applying goroutine itself
// when nothing synced it before.
func TestGateSyncsADeferredAppend(t *testing.T) {
	w := newLeaderWrites()
	l, err := walog.Open(t.TempDir(), walog.Options{DeferSync: func([]*raft.Log) bool { return true }, Deferred: w.deferred})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w.log = l
	if err := l.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand}}); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 0 {
		t.Fatalf("durable %d right after a deferred append, want 0", d)
	}
	if len(w.kick) != 1 {
		t.Fatal("the deferred append did not wake the syncer")
	}
	fsm := &sumFSM{}
	wf := wakingFSM{FSM: fsm, changed: func() {}, writes: w, stop: make(chan struct{})}
	if r := wf.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: make([]byte, 8)}); r != nil {
		t.Fatalf("Apply answered %v", r)
	}
	if d := l.Durable(); d != 1 || fsm.n != 1 {
		t.Fatalf("after Apply: durable %d, %d applied; want 1, 1", d, fsm.n)
	}
}

// TestGateNeverAppliesAnEntryOffDisk: an entry that will never be on the
// node's disk (its deferred sync failed) is not applied; once the node
// stops, Apply answers errNotApplied and the state machine, now behind
// raft's applied index, is never snapshotted.
func TestGateNeverAppliesAnEntryOffDisk(t *testing.T) {
	for _, fail := range []bool{true, false} {
		stop := make(chan struct{})
		w := &leaderWrites{log: &fakeDisk{durable: 4, fail: fail}}
		fsm := &sumFSM{}
		wf := wakingFSM{FSM: fsm, changed: func() {}, writes: w, stop: stop}
		if r := wf.Apply(&raft.Log{Index: 4, Data: make([]byte, 8)}); r != nil || fsm.n != 1 {
			t.Fatalf("an entry on disk: answer %v, %d applied", r, fsm.n)
		}
		answer := make(chan any, 1)
		go func() { answer <- wf.Apply(&raft.Log{Index: 5, Data: make([]byte, 8)}) }()
		close(stop)
		if r, ok := (<-answer).(error); !ok || !errors.Is(r, errNotApplied) {
			t.Fatalf("failed sync %v: Apply answered %v, want errNotApplied", fail, r)
		}
		if fsm.n != 1 {
			t.Fatalf("failed sync %v: the entry off disk was applied", fail)
		}
		if _, err := wf.Snapshot(); !errors.Is(err, errNotApplied) {
			t.Fatalf("failed sync %v: Snapshot answered %v, want errNotApplied", fail, err)
		}
	}
}

// TestVoterCount: the voters of a configuration, recounted when raft
// stores a new one.
func TestVoterCount(t *testing.T) {
	var c voterCache
	one := []raft.Server{{ID: "a", Suffrage: raft.Voter}, {ID: "b", Suffrage: raft.Nonvoter}}
	if n := c.count(one); n != 1 {
		t.Fatalf("%d voters, want 1", n)
	}
	three := []raft.Server{{ID: "a", Suffrage: raft.Voter}, {ID: "b", Suffrage: raft.Voter}, {ID: "c", Suffrage: raft.Voter}}
	if n := c.count(three); n != 3 {
		t.Fatalf("%d voters, want 3", n)
	}
	if n := c.count(nil); n != 0 {
		t.Fatalf("%d voters in no configuration, want 0", n)
	}
}
