package shards

import (
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// TestExchangeBothHalvesOrNeither: by load, three sessions where a holds
// every cold shard (24 of load 1) and b and c four hot ones each (load 8)
// are stuck for single moves; the planner exchanges a hot shard for a cold
// one (shardown's Move.Pair). With room for one handoff the round starts
// neither half; with room for two it starts both, between the same two
// sessions in opposite directions.
func TestExchangeBothHalvesOrNeither(t *testing.T) {
	load := make([]float64, 32)
	for s := range load {
		load[s] = 1
		if s < 8 {
			load[s] = 8
		}
	}
	for _, maxMoves := range []int{1, 2} {
		rig := newBalancerRig(t, 32, BalancerOptions{MaxMoves: maxMoves,
			Loads: func(_ *fsm.View, dst []float64) []float64 { return append(dst[:0], load...) }})
		for _, id := range []string{"a", "b", "c"} {
			rig.session(id, ttl, false)
		}
		rig.grant("b", 0, 2, 4, 6)
		rig.grant("c", 1, 3, 5, 7)
		for s := uint32(8); s < 32; s++ {
			rig.grant("a", s)
		}
		rig.start()
		rig.round(0, true)
		rig.round(time.Millisecond, false)
		rev := revokingShards(rig.view())
		if maxMoves == 1 {
			if len(rev) != 0 {
				t.Fatalf("MaxMoves 1: %v revoking (%s), want none: half an exchange", rev, describe(rig.view()))
			}
			continue
		}
		if len(rev) != 2 {
			t.Fatalf("MaxMoves 2: %v revoking (%s), want an exchange of two", rev, describe(rig.view()))
		}
		var pairs []string
		for _, s := range rev {
			sh, _ := rig.view().Shard(s)
			pairs = append(pairs, sh.Owner+">"+sh.To)
		}
		slices.Sort(pairs)
		hot, _ := rig.view().Shard(rev[0])
		if load[rev[0]] != 8 || load[rev[1]] != 1 || pairs[0] != "a>"+hot.Owner || pairs[1] != hot.Owner+">a" {
			t.Fatalf("MaxMoves 2: revoking %v as %v, want a hot shard of b or c to a and a cold one of a back", rev, pairs)
		}
	}
}
