package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// ownerNode is the node that owns shard s in c's replica ("" if none).
func ownerNode(c *coordinator.Coordinator, s coordinator.ShardID) (string, uint64) {
	sh, ok := c.Table().Shard(s)
	if !ok || sh.State != coordinator.ShardOwned {
		return "", 0
	}
	return sh.Owner.Node.Name, sh.Owner.Token
}

// TestShardsPinAndMove over loopback TCP: a move hands a shard to the
// node asked with a larger token and no overlap of beliefs; a pin puts a
// shard on its node and keeps it there across a raft leader change and
// the pinned node's restart; the plan shows the pin; an unknown node, a
// shard out of range and a move of a shard pinned elsewhere are refused.
func TestShardsPinAndMove(t *testing.T) {
	t.Parallel()
	const shards = 12
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	c0 := cl.Node(0).C()

	moveToOther(ctx, t, c0, 1)

	// Pin: shard 2 to node2, through node1's Operate.
	if _, err := cl.Node(1).C().PinShard(ctx, 2, "node2"); err != nil {
		t.Fatal(err)
	}
	onNode2 := func(what string) { waitShardOn(t, cl, 2, "node2", what) }
	onNode2("shard 2 on node2, pinned")
	plan, err := c0.PlanShards(ctx)
	if err != nil || plan.Waiting != "" || len(plan.Nodes) != 3 {
		t.Fatalf("plan %+v, %v", plan, err)
	}

	// A leader change: the new leader keeps the pin.
	leader := cl.WaitLeader(formTimeout)
	if _, err := leader.C().Operate(ctx, coordinator.Operation{Action: coordinator.ActionStepDown}); err != nil {
		t.Fatal(err)
	}
	cl.WaitFor("a new leader", formTimeout, func() error {
		if l, err := cl.Leader(); err != nil || l.Name == leader.Name {
			return fmt.Errorf("%w: leader %v", holdfasttest.ErrNotYet, l)
		}
		return nil
	})
	waitBalanced(t, cl, shards, formTimeout)
	onNode2("shard 2 still on node2 after the leader change")

	// No two nodes believed a shard at once through the move, the pin and
	// the leader change (checked before the restart: an in-process kill
	// leaves the old incarnation's leases believed until its session's
	// deadline, which its successor's session supersedes).
	mon.check(t)

	// node2 restarts: its new session gets shard 2 back.
	cl.Restart(2)
	cl.WaitFor("node2 back", formTimeout, func() error { return cl.Node(2).C().Ready() })
	onNode2("shard 2 back on node2 after its restart")

	// Refusals.
	for _, op := range []coordinator.Operation{
		{Action: coordinator.ActionPinShard, Shard: 3, Target: "nobody"},
		{Action: coordinator.ActionPinShard, Shard: shards, Target: "node0"},
		{Action: coordinator.ActionMoveShard, Shard: 2, Target: "node0"},
	} {
		if _, err := c0.Operate(ctx, op); !errors.Is(err, coordinator.ErrOperationRefused) {
			t.Errorf("%+v: %v, want refused", op, err)
		}
	}
	if _, err := c0.UnpinShard(ctx, 2); err != nil {
		t.Fatal(err)
	}
}

// moveToOther moves shard s to node0, or node1 if node0 owns it, through
// c's MoveShard, and checks the new owner and its larger token.
func moveToOther(ctx context.Context, t *testing.T, c *coordinator.Coordinator, s coordinator.ShardID) {
	t.Helper()
	from, oldToken := ownerNode(c, s)
	to := "node0"
	if from == to {
		to = "node1"
	}
	res, err := c.MoveShard(ctx, s, to)
	if err != nil {
		t.Fatal(err)
	}
	if res.Token <= oldToken || res.Node.Name != to {
		t.Fatalf("move: %+v; want owned by %s with a token above %d", res, to, oldToken)
	}
	t.Logf("move: %s", res.Message)
}

// waitShardOn waits until every running node sees shard s owned by the
// node named node.
func waitShardOn(t *testing.T, cl *holdfasttest.Cluster, s coordinator.ShardID, node, what string) {
	t.Helper()
	cl.WaitFor(what, formTimeout, func() error {
		for _, n := range cl.Running() {
			if o, _ := ownerNode(n.C(), s); o != node {
				return fmt.Errorf("%w: %s sees shard %d on %q", holdfasttest.ErrNotYet, n.Name, s, o)
			}
		}
		return nil
	})
}

// TestShardsNoShardsNode: a node with Shards.NoShards owns no shard while
// the others share them all, and refuses Undrain.
func TestShardsNoShardsNode(t *testing.T) {
	t.Parallel()
	const shards = 12
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Shards.NoShards = i == 2
	}})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("every shard owned by node0 or node1", formTimeout, func() error {
		for s := range shards {
			if o, _ := ownerNode(cl.Node(2).C(), coordinator.ShardID(s)); o != "node0" && o != "node1" {
				return fmt.Errorf("%w: shard %d on %q", holdfasttest.ErrNotYet, s, o)
			}
		}
		return nil
	})
	if n := len(cl.Node(2).C().Owned()); n != 0 {
		t.Fatalf("the NoShards node owns %d shards", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Node(2).C().Undrain(ctx); !errors.Is(err, coordinator.ErrOperationRefused) {
		t.Fatalf("Undrain on a NoShards node: %v, want refused", err)
	}
}
