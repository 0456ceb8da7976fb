package coordinator_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShardsBalancedAndJoin: 5 nodes on loopback TCP own 256 shards,
// balanced; a sixth node joins and receives about S/6 shards, no more than
// 1.1 × ceil(S/6) moves, and no two nodes ever believe they own the same
// shard at once.
func TestShardsBalancedAndJoin(t *testing.T) {
	const shards = 256
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Configure: func(i int, c *coordinator.Config) {
		c.Shards = shards
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	counts := waitBalanced(t, cl, shards, formTimeout)
	t.Logf("5 nodes: %v after %d grants", counts, mon.grants())
	joined := time.Now()
	cl.Add()
	counts = waitBalanced(t, cl, shards, formTimeout)
	moves, perShard := mon.grantsSince(joined)
	bound := 1.1 * math.Ceil(shards/6.0)
	t.Logf("6 nodes: %v; %d moves after the join (bound %.1f)", counts, moves, bound)
	if float64(moves) > bound {
		t.Errorf("%d shards moved after one join, want at most %.1f", moves, bound)
	}
	for s, n := range perShard {
		if n > 1 {
			t.Errorf("shard %d moved %d times after one join", s, n)
		}
	}
	gap := mon.check(t)
	t.Logf("longest unowned gap between two owners: %v", gap)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	_ = ctx
}
