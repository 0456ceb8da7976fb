package raftnode

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// follower is a raft network transport on loopback that counts the
// AppendEntries it receives and answers them with success (or not).
type follower struct {
	trans    *raft.NetworkTransport
	got      atomic.Int64
	commit   atomic.Uint64 // the commit index of the last request
	refuse   atomic.Bool
	stop     chan struct{}
	finished chan struct{}
}

func startFollower(t *testing.T) *follower {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{trans: trans, stop: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(f.finished)
		for {
			select {
			case rpc := <-f.trans.Consumer():
				req := rpc.Command.(*raft.AppendEntriesRequest)
				f.got.Add(1)
				f.commit.Store(req.LeaderCommitIndex)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry,
					Success: !f.refuse.Load()}, nil)
			case <-f.stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(f.stop)
		f.trans.Close()
		select {
		case <-f.finished:
		case <-time.After(10 * time.Second):
			t.Error("follower's consumer did not stop")
		}
	})
	return f
}

// startVoterRig starts a follower and a leader transport (answers fresh
// for an hour) that asks voters whether a follower votes (none does until
// the test says so).
func startVoterRig(t *testing.T) (*follower, *raftTransport, map[raft.ServerID]bool) {
	t.Helper()
	f := startFollower(t)
	tr := newLeaderTransport(t, time.Hour)
	voters := map[raft.ServerID]bool{}
	isVoter := func(id raft.ServerID) bool { return voters[id] }
	tr.voter.Store(&isVoter)
	return f, tr, voters
}

// TestIdleRepeatsToNonVotersAnsweredFromMemory: an empty AppendEntries to a
// non-voter that repeats the last one it accepted is answered without a
// round trip, with the follower's answer; a new commit index, the first
// heartbeat (no commit index), a voter, a refused answer and a stale answer
// all make the request go out.
func TestIdleRepeatsToNonVotersAnsweredFromMemory(t *testing.T) {
	f, tr, voters := startVoterRig(t)
	const id = raft.ServerID("f")
	send := func(what string, req raft.AppendEntriesRequest, wantSent bool) {
		t.Helper()
		before := f.got.Load()
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries(id, f.trans.LocalAddr(), &req, &resp); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if sent := f.got.Load() > before; sent != wantSent {
			t.Fatalf("%s: sent = %v, want %v", what, sent, wantSent)
		}
		if resp.Term != req.Term || resp.LastLog != req.PrevLogEntry {
			t.Fatalf("%s: answer %+v for request %+v", what, resp, req)
		}
	}
	idle := raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 10, PrevLogTerm: 3, LeaderCommitIndex: 10}
	send("first idle request", idle, true)
	send("repeat", idle, false)
	send("repeat again", idle, false)

	next := idle
	next.LeaderCommitIndex = 11
	send("new commit index", next, true)
	send("repeat of the new commit index", next, false)

	send("heartbeat", raft.AppendEntriesRequest{Term: 3}, true)
	send("repeat", next, false)

	entries := next
	entries.Entries = []*raft.Log{{Index: 11, Term: 3}}
	send("entries", entries, true)

	voters[id] = true
	send("repeat to a voter", next, true)
	voters[id] = false
	send("repeat to the non-voter again", next, false)

	tr.mu.Lock()
	a := tr.last[id]
	a.at = time.Now().Add(-2 * time.Hour)
	tr.last[id] = a
	tr.mu.Unlock()
	send("repeat after the answer went stale", next, true)
	send("repeat after the fresh answer", next, false)

	f.refuse.Store(true)
	later := next
	later.LeaderCommitIndex = 12
	for _, what := range []string{"refused", "repeat of the refused"} {
		before := f.got.Load()
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries(id, f.trans.LocalAddr(), &later, &resp); err != nil {
			t.Fatal(err)
		}
		if f.got.Load() == before || resp.Success {
			t.Fatalf("%s: sent = %v, answer %+v", what, f.got.Load() > before, resp)
		}
	}
}

// TestHeartbeatsToNonVotersThinned: a heartbeat to a non-voter goes out
// when the last real one is refresh/4 old, in another term, refused, or
// sent to a voter; in between it is answered from the follower's last
// heartbeat answer.
func TestHeartbeatsToNonVotersThinned(t *testing.T) {
	f, tr, voters := startVoterRig(t)
	const id = raft.ServerID("f")
	beat := func(what string, term uint64, wantSent bool) {
		t.Helper()
		before := f.got.Load()
		var resp raft.AppendEntriesResponse
		req := raft.AppendEntriesRequest{Term: term}
		if err := tr.AppendEntries(id, f.trans.LocalAddr(), &req, &resp); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if sent := f.got.Load() > before; sent != wantSent {
			t.Fatalf("%s: sent = %v, want %v", what, sent, wantSent)
		}
		if resp.Term != term || resp.Success == f.refuse.Load() {
			t.Fatalf("%s: answer %+v to a heartbeat of term %d", what, resp, term)
		}
	}
	beat("first heartbeat", 3, true)
	beat("second heartbeat", 3, false)
	beat("third heartbeat", 3, false)
	beat("heartbeat of a new term", 4, true)
	beat("repeat in the new term", 4, false)

	tr.mu.Lock()
	a := tr.beats[id]
	a.at = time.Now().Add(-tr.refresh / 4)
	tr.beats[id] = a
	tr.mu.Unlock()
	beat("heartbeat once the last one is refresh/4 old", 4, true)
	beat("heartbeat after that fresh one", 4, false)

	voters[id] = true
	beat("heartbeat to a voter", 4, true)
	beat("another heartbeat to the voter", 4, true)
	voters[id] = false

	f.refuse.Store(true)
	beat("refused heartbeat", 5, true)
	beat("heartbeat after a refusal", 5, true)
}

// TestIdleRepeatsSentBeforeRaftRuns: until the transport knows the raft
// configuration, every request goes out.
func TestIdleRepeatsSentBeforeRaftRuns(t *testing.T) {
	f := startFollower(t)
	tr := newLeaderTransport(t, time.Hour)
	idle := raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 4, PrevLogTerm: 1, LeaderCommitIndex: 4}
	for range 3 {
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries("f", f.trans.LocalAddr(), &idle, &resp); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.got.Load(); got != 3 {
		t.Fatalf("follower got %d requests, want 3", got)
	}
}

// TestVoterCacheFollowsConfigurations: a server is a voter unless the
// configuration names it a non-voter, and a new configuration (a new
// slice, as raft stores each) is read afresh.
func TestVoterCacheFollowsConfigurations(t *testing.T) {
	var c voterCache
	one := []raft.Server{{ID: "a", Suffrage: raft.Voter}, {ID: "b", Suffrage: raft.Nonvoter}}
	for _, tc := range []struct {
		id   raft.ServerID
		want bool
	}{{"a", true}, {"b", false}, {"gone", true}, {"b", false}} {
		if got := c.voter(one, tc.id); got != tc.want {
			t.Fatalf("first configuration: voter(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
	two := []raft.Server{{ID: "a", Suffrage: raft.Voter}, {ID: "b", Suffrage: raft.Voter}}
	if !c.voter(two, "b") {
		t.Fatal("b promoted in a new configuration still counts as a non-voter")
	}
	if c.voter(one, "b") {
		t.Fatal("b is a non-voter again in the first configuration")
	}
	if !c.voter(nil, "b") {
		t.Fatal("an empty configuration has a non-voter")
	}
}

// TestIdleAnswersOfGoneFollowersForgotten: the first answer kept for a
// follower drops the answers too old to use (followers that left).
func TestIdleAnswersOfGoneFollowersForgotten(t *testing.T) {
	f := startFollower(t)
	tr := newLeaderTransport(t, time.Minute)
	tr.mu.Lock()
	tr.last["gone"] = idleAnswer{term: 1, at: time.Now().Add(-time.Hour)}
	tr.last["recent"] = idleAnswer{term: 1, at: time.Now()}
	tr.mu.Unlock()
	idle := raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 4, PrevLogTerm: 1, LeaderCommitIndex: 4}
	var resp raft.AppendEntriesResponse
	if err := tr.AppendEntries("f", f.trans.LocalAddr(), &idle, &resp); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, gone := tr.last["gone"]
	_, recent := tr.last["recent"]
	_, kept := tr.last["f"]
	if gone || !recent || !kept {
		t.Fatalf("after a new follower's answer: gone kept %v, recent kept %v, new kept %v", gone, recent, kept)
	}
}

// newLeaderTransport returns the leader's side: a raftTransport over a real
// loopback TCP transport, closed when the test ends.
func newLeaderTransport(t *testing.T, refresh time.Duration) *raftTransport {
	t.Helper()
	out, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tr := newRaftTransport(out, refresh, newGuard(nil, nil, time.Second, slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { tr.Close(); tr.stopRPCs() })
	return tr
}
