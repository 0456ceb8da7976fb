package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// TestForcedReleaseOfManyShards checks that the leader's forced release
// of thousands of revoked shards at once is split into commands the FSM
// accepts: one command for them all exceeded fsm.MaxCommandSize and
// panicked in the balancer (seen in a 3 × 100,000-shard join).
func TestForcedReleaseOfManyShards(t *testing.T) {
	cfg := DefaultLocalConfig()
	cfg.NodeName = "n1"
	cfg.DataDir = t.TempDir()
	cfg.BootstrapExpect = 1
	cfg.Voters = 1
	cfg.Shards = 6000
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for c.raft.State() != raft.Leader || c.fsm.View().ShardCount() != cfg.Shards {
		if time.Now().After(deadline) {
			t.Fatal("no leader with a shard table after 60s")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	items := make([]fsm.ShardItem, cfg.Shards)
	for i := range items {
		items[i] = fsm.ShardItem{Shard: uint32(i), Session: "0123456789abcdef0123456789abcdef", Token: uint64(i + 1)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No shard is revoking under that session, so none is released; what
	// is checked is that the batch is committed without a panic.
	if n := newBalancer(c).commitForced(ctx, items); n != 0 {
		t.Fatalf("forced release of shards not revoking: %d took effect, want 0", n)
	}
	if idx := c.fsm.View().Index(); idx == 0 {
		t.Fatal("nothing applied")
	}
}
