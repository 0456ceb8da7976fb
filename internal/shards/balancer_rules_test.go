package shards

import (
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// taggedSession creates session id of node n-id with tags.
func (r *replica) taggedSession(id string, tags ...string) {
	r.mustApply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, Node: "n-" + id, NodeID: "n-" + id,
		TTLNanos: int64(ttl), Weight: 1, Tags: tags}})
}

// TestBalancerRules: a rule keeps its shards on the sessions with its
// tags (a shard on another is moved, beyond MaxMoves); a rule nobody
// passes leaves its shards unowned (the owner's is revoked, with reason
// "rule") and the report lists them; a node with the tag joining takes
// them.
func TestBalancerRules(t *testing.T) {
	var last *PlanReport
	rig := newBalancerRig(t, 8, BalancerOptions{MaxMoves: 1, Report: func(rep *PlanReport) { last = rep }})
	rig.taggedSession("a", "ssd")
	rig.session("b", ttl, false)
	rig.grant("a", 4, 5, 6, 7)
	rig.grant("b", 0, 1, 2, 3)
	rig.mustApply(fsm.Command{Op: fsm.OpShardRule, Rule: &fsm.RuleCmd{Name: "hot", First: 0, Last: 1, Require: []string{"ssd"}}})
	rig.mustApply(fsm.Command{Op: fsm.OpShardRule, Rule: &fsm.RuleCmd{Name: "gpu", First: 3, Last: 3, Require: []string{"gpu"}}})
	rig.start()
	rig.round(0, true)
	if got := revokingShards(rig.view()); !slices.Equal(got, []uint32{0, 1, 3}) {
		t.Fatalf("after a round: %s; want shards 0, 1 (to a) and 3 (nobody) revoking", describe(rig.view()))
	}
	if sh, _ := rig.view().Shard(0); sh.To != "a" {
		t.Fatalf("shard 0 revoking to %q, want a", sh.To)
	}
	if sh, _ := rig.view().Shard(3); sh.To != "" {
		t.Fatalf("shard 3 revoking to %q, want no target", sh.To)
	}
	reasons := map[ShardID]string{}
	for _, m := range last.Moves {
		reasons[m.Shard] = m.Reason
	}
	if reasons[0] != ReasonRule || reasons[3] != ReasonRule {
		t.Fatalf("moves %+v; want shards 0 and 3 moved for their rules", last.Moves)
	}
	if !slices.Equal(last.Unplaceable, []Unplaceable{{Shard: 3}}) {
		t.Fatalf("unplaceable %+v, want shard 3", last.Unplaceable)
	}
	for _, s := range []uint32{0, 1, 3} {
		rig.release(s)
	}
	rig.round(time.Millisecond, false)
	for s, want := range map[uint32]string{0: "a", 1: "a", 3: ""} {
		if sh, _ := rig.view().Shard(s); sh.Owner != want {
			t.Fatalf("shard %d: %+v, want owner %q (%s)", s, sh, want, describe(rig.view()))
		}
	}
	rig.taggedSession("c", "gpu")
	rig.round(time.Hour, false) // past c's join stabilization
	if sh, _ := rig.view().Shard(3); sh.Owner != "c" {
		t.Fatalf("shard 3 after c joined: %+v (%s)", sh, describe(rig.view()))
	}
}
