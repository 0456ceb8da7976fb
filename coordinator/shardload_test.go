package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// shardLoad is the load the tests' shards report: eight hot shards.
func shardLoad(s coordinator.ShardID) float64 {
	if s < 8 {
		return 8
	}
	return 1
}

// TestShardsBalanceByLoad: three nodes on loopback TCP whose shard leases
// report uneven loads (ShardLease.ReportLoad, carried on keepalives) end
// with every node's load within 10% of its target, and the leader's
// Placement shows the round by load with each node's load and target.
func TestShardsBalanceByLoad(t *testing.T) {
	t.Parallel()
	const shards = 32
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Shards.Handler = coordinator.HandlerFuncs{ServeFunc: func(_ context.Context, l *coordinator.ShardLease) {
			l.ReportLoad(shardLoad(l.Shard()))
		}}
	}})
	cl.WaitFormed(formTimeout)
	total := 0.0
	for s := range shards {
		total += shardLoad(coordinator.ShardID(s))
	}
	cl.WaitFor("shards balanced by load", formTimeout, func() error {
		leader, err := cl.Leader()
		if err != nil {
			return err
		}
		p, ok := leader.C().Placement()
		if !ok || !p.ByLoad || len(p.Nodes) != 3 || len(p.Moves) != 0 {
			return fmt.Errorf("%w: placement %+v", holdfasttest.ErrNotYet, p)
		}
		tab := leader.C().Table()
		load := map[string]float64{}
		for s := range shards {
			sh, ok := tab.Shard(coordinator.ShardID(s))
			if !ok || sh.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d not owned", holdfasttest.ErrNotYet, s)
			}
			load[sh.Owner.Node.Name] += shardLoad(coordinator.ShardID(s))
		}
		for _, n := range p.Nodes {
			if n.Target < total/3-1e-6 || n.Target > total/3+1e-6 {
				return fmt.Errorf("node %s target %v, want %v", n.Node, n.Target, total/3)
			}
			if r := load[n.Node] / n.Target; r < 0.9 || r > 1.1 {
				return fmt.Errorf("%w: node %s carries %v, target %v", holdfasttest.ErrNotYet, n.Node, load[n.Node], n.Target)
			}
		}
		return nil
	})
}
