package shards

import (
	"context"
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
	if cmds := r.view().Index() - before; cmds != (n+shardChunk-1)/shardChunk {
		t.Fatalf("%d commands committed, want %d of at most %d items", cmds, (n+shardChunk-1)/shardChunk, shardChunk)
	}
}
