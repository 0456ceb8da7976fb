package shards

import (
	"context"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
)

// TestForcedReleaseOfManyShards checks that the leader's forced release
// of thousands of revoked shards at once is split into commands the FSM
// accepts: one command for them all exceeded fsm.MaxCommandSize and
// panicked in the balancer (seen in a 3 × 100,000-shard join).
func TestForcedReleaseOfManyShards(t *testing.T) {
	const n = 6000
	r := newReplica(t, n)
	b := NewBalancer(BalancerOptions{View: r.view, Apply: r.apply})
	items := make([]fsm.ShardItem, n)
	for i := range items {
		items[i] = fsm.ShardItem{Shard: uint32(i), Session: "0123456789abcdef0123456789abcdef", Token: uint64(i + 1)}
	}
	before := r.view().Index()
	// No shard is revoking under that session, so none is released; what
	// is checked is that the batch is committed in commands the FSM
	// decodes (the fake fails the test on a command too large to encode).
	if got := b.commitForced(context.Background(), items); got != 0 {
		t.Fatalf("forced release of shards not revoking: %d took effect, want 0", got)
	}
	if cmds, want := r.view().Index()-before, uint64(len(chunkItems(items))); cmds != want || want < 2 {
		t.Fatalf("%d commands committed, want %d (more than one)", cmds, want)
	}
}

// TestChunkItemsFitCommands checks that every chunk of items encodes to a
// command the FSM accepts, with the longest session IDs allowed, and that
// the chunks keep every item in order.
func TestChunkItemsFitCommands(t *testing.T) {
	for _, idLen := range []int{1, 32, fsm.MaxNameLength} {
		id := strings.Repeat("s", idLen)
		items := make([]fsm.ShardItem, 10_000)
		for i := range items {
			items[i] = fsm.ShardItem{Shard: uint32(i), Session: id, Token: 1 << 60, To: id}
		}
		next := uint32(0)
		for _, chunk := range chunkItems(items) {
			if len(chunk) == 0 || len(chunk) > fsm.MaxShardItems {
				t.Fatalf("id length %d: a chunk of %d items", idLen, len(chunk))
			}
			b, err := fsm.Encode(fsm.Command{Op: fsm.OpShardRevoke, Shard: &fsm.ShardCmd{Force: true, Items: chunk}})
			if err != nil || len(b) > fsm.MaxCommandSize {
				t.Fatalf("id length %d: a chunk of %d items encodes to %d bytes: %v", idLen, len(chunk), len(b), err)
			}
			for _, it := range chunk {
				if it.Shard != next {
					t.Fatalf("id length %d: item %d where %d was due", idLen, it.Shard, next)
				}
				next++
			}
		}
		if next != uint32(len(items)) {
			t.Fatalf("id length %d: %d items in chunks, want %d", idLen, next, len(items))
		}
	}
}
