package shardown

import "testing"

// TestHoldReceivesNothingButKeepsItsShards: a member with Hold gets no
// free shard and no shard moved to it, even when no member is stable (the
// bootstrap rule makes every other member eligible), and its own shards
// are not taken away while the others are within their bounds.
func TestHoldReceivesNothingButKeepsItsShards(t *testing.T) {
	current := make([]string, 8)
	for s := range 4 {
		current[s] = "held"
	}
	members := []Member{{ID: "held", Hold: true}, {ID: "new", JoinedAt: 100}}
	p := Params{Shards: 8, Now: 100, JoinStabilization: 50, MaxMovesInFlight: -1}
	target, moves, err := Plan(members, current, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range moves {
		if m.To == "held" {
			t.Fatalf("move %+v to a held member", m)
		}
	}
	for s := range 4 {
		if target[s] != "held" {
			t.Fatalf("shard %d taken from the held member: %v", s, target)
		}
	}
	for s := 4; s < 8; s++ {
		if target[s] != "new" {
			t.Fatalf("free shard %d not granted to the only eligible member: %v", s, target)
		}
	}
	// Holding alone: nothing is granted at all.
	if _, moves, err := Plan([]Member{{ID: "held", Hold: true}}, current, p); err != nil || len(moves) != 0 {
		t.Fatalf("moves %v, %v with only a held member", moves, err)
	}
}
