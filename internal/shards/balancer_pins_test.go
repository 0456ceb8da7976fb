package shards

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// TestBalancerPinsAndMoves: a pinned shard is handed to its node's session
// (beyond MaxMoves) and stays there; a pin survives the node's new session
// (a restart); a one-off move is cleared once the shard is owned there.
func TestBalancerPinsAndMoves(t *testing.T) {
	rig := newBalancerRig(t, 8, BalancerOptions{MaxMoves: 1})
	rig.session("a", ttl, false)
	rig.session("b", ttl, false)
	rig.grant("a", 0, 1, 2, 3)
	rig.grant("b", 4, 5, 6, 7)
	rig.mustApply(fsm.Command{Op: fsm.OpShardPin, Pin: &fsm.PinCmd{Shard: 0, Node: "n-b"}})
	rig.mustApply(fsm.Command{Op: fsm.OpShardPin, Pin: &fsm.PinCmd{Shard: 1, Node: "n-b", Once: true}})
	rig.start()
	rig.round(0, true)
	if got := revokingShards(rig.view()); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("after a round: %s; want shards 0 and 1 revoking (pins are not rate-limited)", describe(rig.view()))
	}
	rig.release(0)
	rig.release(1)
	rig.round(time.Millisecond, false) // grants both to b
	rig.round(time.Millisecond, false) // sees the move done: clears it
	if _, ok := rig.view().ShardPin(1); ok {
		t.Fatal("the one-off move is still pinned after it completed")
	}
	if p, ok := rig.view().ShardPin(0); !ok || p.Node != "n-b" {
		t.Fatalf("the pin of shard 0: %+v %v", p, ok)
	}
	// b restarts: its new session on the same node gets the pinned shard.
	rig.mustApply(fsm.Command{Op: fsm.OpSessionExpire, Session: &fsm.SessionCmd{ID: "b"}})
	rig.mustApply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: "b2", Node: "n-b", NodeID: "n-b", TTLNanos: int64(ttl), Weight: 1, Gen: 2}})
	rig.round(time.Millisecond, false)
	if sh, _ := rig.view().Shard(0); sh.Owner != "b2" {
		t.Fatalf("after b's restart shard 0 is %+v; want it granted to b2, pinned", sh)
	}
}

// TestPreviewEqualsNextRound: on random tables, loads and pins, the
// preview of a round (shards plan) proposes exactly the moves the next
// round at the same instant commits.
func TestPreviewEqualsNextRound(t *testing.T) {
	const seed = 20261202
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for c := range 20 {
		load := make([]float64, 64)
		for s := range load {
			load[s] = -1
			if c%2 == 0 {
				load[s] = r.Float64() * 10
			}
		}
		var last *PlanReport
		rig := newBalancerRig(t, 64, BalancerOptions{MaxMoves: 1 + r.IntN(8),
			Loads:  func(_ *fsm.View, dst []float64) []float64 { return append(dst[:0], load...) },
			Report: func(rep *PlanReport) { last = rep }})
		ids := []string{"a", "b", "c", "d"}[:2+r.IntN(3)]
		for _, id := range ids {
			rig.session(id, ttl, false)
		}
		for s := range uint32(64) {
			if k := r.IntN(len(ids) + 1); k < len(ids) {
				rig.grant(ids[k], s)
			}
		}
		if r.IntN(2) == 0 {
			rig.mustApply(fsm.Command{Op: fsm.OpShardPin, Pin: &fsm.PinCmd{Shard: uint32(r.IntN(64)), Node: "n-" + ids[0]}})
		}
		rig.start()
		rig.round(0, true)
		for round := range 4 {
			for _, s := range revokingShards(rig.view()) {
				if r.IntN(2) == 0 {
					rig.release(s)
				}
			}
			rig.now = rig.now.Add(time.Millisecond)
			want := rig.b.Preview(rig.view(), rig.now)
			rig.round(0, false)
			if want == nil || last == nil || !reflect.DeepEqual(want.Moves, last.Moves) || !reflect.DeepEqual(want.Members, last.Members) {
				t.Fatalf("case %d round %d: preview %+v, round %+v", c, round, want, last)
			}
			for _, m := range last.Moves {
				if m.Reason == "" || m.Reason == shardown.ReasonCount && c%2 == 0 {
					t.Fatalf("case %d: move %+v: a count move with load reports", c, m)
				}
			}
		}
	}
}
