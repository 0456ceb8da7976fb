package raftnode

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// The leader nudges the followers after a release only when the release
// handed the lease to a session of another node (and after a session's
// end); a release that frees the lease, or hands it to this node, does not
// cost a barrier.
func TestHandsOver(t *testing.T) {
	f := fsm.New()
	var index uint64
	apply := func(cmd fsm.Command) []byte {
		t.Helper()
		data, err := fsm.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		if r, _ := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(fsm.Result); r.Err != nil {
			t.Fatalf("%v: %v", cmd.Op, r.Err)
		}
		return data
	}
	for _, s := range []struct{ id, node string }{{"a", "me"}, {"b", "other"}} {
		apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: s.id, Node: s.node, NodeID: s.node, TTLNanos: int64(time.Minute)}})
	}
	lease := func(op fsm.Op, sess string, req uint64) fsm.Command {
		return fsm.Command{Op: op, Lease: &fsm.LeaseCmd{Name: "l", Session: sess, Request: req, Wait: true}}
	}
	n := &Node{opts: Options{ID: "me", FSM: f}}

	apply(lease(fsm.OpAcquire, "a", 1))
	apply(lease(fsm.OpAcquire, "b", 1)) // queued behind a
	if !n.handsOver(apply(lease(fsm.OpRelease, "a", 1))) {
		t.Fatal("a release that handed the lease to another node's waiter asks for no nudge")
	}
	apply(lease(fsm.OpAcquire, "a", 2)) // queued behind b
	if n.handsOver(apply(lease(fsm.OpRelease, "b", 1))) {
		t.Fatal("a release that handed the lease to this node asks for a nudge")
	}
	if n.handsOver(apply(lease(fsm.OpRelease, "a", 2))) {
		t.Fatal("a release that freed the lease asks for a nudge")
	}
	if !n.handsOver(apply(fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: "b"}})) {
		t.Fatal("a session's end asks for no nudge")
	}
}
