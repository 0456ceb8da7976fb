package shardown

import (
	"fmt"
	"slices"
	"testing"
)

// TestPinsMoveAndStay: a pinned shard moves to its member first, by count
// and by load, whatever the balance, and no later call moves it away; a
// pin to a member on Hold or absent does nothing.
func TestPinsMoveAndStay(t *testing.T) {
	for _, byLoad := range []bool{false, true} {
		t.Run(fmt.Sprint("byLoad=", byLoad), func(t *testing.T) {
			ms := uniform(3)
			cur := roundRobin(ms, 30)
			p := Params{Shards: 30, MaxMovesInFlight: -1, Pins: []Pin{{Shard: 0, Member: "m02"}, {Shard: 3, Member: "m02"}, {Shard: 6, Member: "m02"},
				{Shard: 9, Member: "gone"}}}
			if byLoad {
				p.Load = slices.Repeat([]float64{1}, 30)
			}
			target, moves, err := Plan(ms, cur, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(moves) < 3 || moves[0] != (Move{Shard: 0, From: "m00", To: "m02", Reason: ReasonPin}) || moves[2].Shard != 6 {
				t.Fatalf("moves %v; want the three pins first", moves)
			}
			final, _, _ := convergeLoad(t, ms, target, p)
			for _, s := range []int{0, 3, 6} {
				if final[s] != "m02" {
					t.Fatalf("shard %d ended on %q, pinned to m02", s, final[s])
				}
			}
			held := slices.Clone(ms)
			held[2].Hold = true
			if _, moves, _ := Plan(held, cur, p); slices.ContainsFunc(moves, func(m Move) bool { return m.Reason == ReasonPin }) {
				t.Fatalf("a pin to a member on hold moved: %v", moves)
			}
		})
	}
}

// TestPinsInvalid: a pin out of range, repeated or without a member is
// rejected.
func TestPinsInvalid(t *testing.T) {
	ms := uniform(2)
	for _, pins := range [][]Pin{{{Shard: 4, Member: "m00"}}, {{Shard: 1, Member: "m00"}, {Shard: 1, Member: "m01"}}, {{Shard: 1}}} {
		if _, _, err := Plan(ms, make([]string, 4), Params{Shards: 4, Pins: pins}); err == nil {
			t.Fatalf("pins %v accepted", pins)
		}
	}
}
