package shardown_test

import (
	"fmt"

	"github.com/holdfast-go/holdfast/shardown"
)

// A fresh table: every shard is free and is granted, in shard order, to the
// least loaded member.
func ExamplePlan() {
	members := []shardown.Member{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	current := make([]string, 6)
	target, moves, err := shardown.Plan(members, current, shardown.Params{Shards: 6, MaxMovesInFlight: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println(target)
	for _, m := range moves {
		fmt.Printf("shard %d: %q -> %q\n", m.Shard, m.From, m.To)
	}
	// Output:
	// [a b c a b c]
	// shard 0: "" -> "a"
	// shard 1: "" -> "b"
	// shard 2: "" -> "c"
	// shard 3: "" -> "a"
	// shard 4: "" -> "b"
	// shard 5: "" -> "c"
}

// A member joins a balanced table: the planner moves just enough shards to
// it, at most K per call, and the caller calls again after each batch.
func ExamplePlan_join() {
	p := shardown.Params{Shards: 8, MaxMovesInFlight: 1}
	members := []shardown.Member{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	table := []string{"a", "b", "a", "b", "a", "b", "a", "b"}
	for {
		next, moves, err := shardown.Plan(members, table, p)
		if err != nil {
			panic(err)
		}
		if len(moves) == 0 {
			break
		}
		fmt.Println(moves) // the caller performs the handoffs here
		table = next
	}
	fmt.Println(table)
	// Output:
	// [{0 false a c count}]
	// [{1 false b c count}]
	// [c c a b a b a b]
}

// Keys map to shards by a hash that never changes.
func ExampleShardFor() {
	fmt.Println(shardown.ShardFor([]byte("user:42"), 256))
	// Output: 220
}
