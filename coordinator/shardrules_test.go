package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// onlyOn waits until every running node's replica shows each of shards
// owned by node (or unowned, for node "").
func onlyOn(cl *holdfasttest.Cluster, what, node string, shards ...coordinator.ShardID) {
	cl.WaitFor(what, formTimeout, func() error {
		for _, n := range cl.Running() {
			for _, s := range shards {
				if o, _ := ownerNode(n.C(), s); o != node {
					return fmt.Errorf("%w: %s sees shard %d on %q, want %q", holdfasttest.ErrNotYet, n.Name, s, o, node)
				}
			}
		}
		return nil
	})
}

// TestShardsRules over loopback TCP: a placement rule moves its shards to
// the nodes with its tags (a node's zone counts as the tag zone=Z) with
// no two beliefs at once; a rule no node passes leaves its shard unowned
// and the plan says so, until the rule goes; the tags are gossiped; a pin
// the rules forbid, a
// range outside the table and a rule without tags are refused; every
// node shows the rules.
func TestShardsRules(t *testing.T) {
	t.Parallel()
	const shards = 12
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		switch i {
		case 0:
			c.Shards.Tags = []string{"ssd"}
		case 1:
			c.Zone = "eu"
		}
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	c2 := cl.Node(2).C()

	for name, rule := range map[string]string{"hot": "0-3:ssd", "eu": "8-9:zone=eu", "nobody": "10:gpu"} {
		if _, err := c2.SetShardRule(ctx, name, rule); err != nil {
			t.Fatalf("rule %s %s: %v", name, rule, err)
		}
	}
	onlyOn(cl, "shards 0-3 on node0 (ssd)", "node0", 0, 1, 2, 3)
	onlyOn(cl, "shards 8-9 on node1 (zone eu)", "node1", 8, 9)
	onlyOn(cl, "shard 10 unowned (nobody has gpu)", "", 10)
	plan, err := c2.PlanShards(ctx)
	if err != nil || !slices.Equal(plan.Unplaceable, []coordinator.ShardID{10}) {
		t.Fatalf("plan: unplaceable %v (%v), want [10]", plan.Unplaceable, err)
	}
	cl.WaitFor("node0's tags gossiped", formTimeout, func() error {
		for _, m := range c2.Members() {
			if m.Name == "node0" && m.Tags == "ssd" {
				return nil
			}
		}
		return fmt.Errorf("%w: node2 does not see node0 tagged ssd", holdfasttest.ErrNotYet)
	})
	if got := cl.Node(1).C().ShardRules(); len(got) != 3 || got[0].Name != "eu" || got[1].String() != "0-3:ssd" || got[2].Name != "nobody" {
		t.Fatalf("node1's rules: %+v", got)
	}

	for _, op := range []coordinator.Operation{
		{Action: coordinator.ActionPinShard, Shard: 1, Target: "node2"},
		{Action: coordinator.ActionMoveShard, Shard: 8, Target: "node0"},
		{Action: coordinator.ActionSetShardRule, Target: "x", Rule: fmt.Sprintf("0-%d:ssd", shards)},
		{Action: coordinator.ActionSetShardRule, Target: "x", Rule: "0-1:"},
		{Action: coordinator.ActionSetShardRule, Target: "x", Rule: "0-1:a b"},
		{Action: coordinator.ActionSetShardRule, Target: "", Rule: "0-1:ssd"},
		{Action: coordinator.ActionClearShardRule, Target: ""},
	} {
		if _, err := c2.Operate(ctx, op); !errors.Is(err, coordinator.ErrOperationRefused) {
			t.Errorf("%+v: %v, want refused", op, err)
		}
	}

	if _, err := c2.ClearShardRule(ctx, "nobody"); err != nil {
		t.Fatal(err)
	}
	cl.WaitFor("shard 10 owned once its rule is gone", formTimeout, func() error {
		if o, _ := ownerNode(c2, 10); o == "" {
			return fmt.Errorf("%w: shard 10 unowned", holdfasttest.ErrNotYet)
		}
		return nil
	})
	onlyOn(cl, "shards 0-3 still on node0", "node0", 0, 1, 2, 3)
	mon.check(t)
}

// TestShardsBadTags: a tag with a space, more tags than a session may
// carry, or more bytes than gossip metadata takes, is a configuration
// error naming Shards.Tags.
func TestShardsBadTags(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 60)
	for _, tags := range [][]string{{"a b"}, {""}, {"a,b"}, make([]string, 17), {long + "1", long + "2", long + "3", long + "4"}} {
		for i := range tags {
			if len(tags) == 17 {
				tags[i] = fmt.Sprintf("t%d", i)
			}
		}
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName = "n"
		cfg.DataDir = t.TempDir()
		cfg.Shards.Tags = tags
		c, err := coordinator.New(cfg)
		if err == nil {
			c.Close()
		}
		var ce *coordinator.ConfigError
		if !errors.As(err, &ce) || ce.Field != "Shards.Tags" {
			t.Errorf("tags %q: %v, want a ConfigError on Shards.Tags", tags, err)
		}
	}
}
