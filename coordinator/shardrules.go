package coordinator

import (
	"context"
	"slices"
	"strings"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/shardown"
)

// The operator's placement rules (Operation.Action; Operation.Target names
// the rule).
const (
	// ActionSetShardRule sets the placement rule Target to Operation.Rule,
	// "FIRST-LAST:TAG[,TAG...]": only nodes carrying every tag (see
	// Config.Shards.Tags) may own the shards FIRST to LAST. It is
	// committed through raft; the leader's balancer moves shards on nodes
	// the rule refuses (a fenced handoff, not limited by Shards.MaxMoves)
	// and leaves unowned the shards no node passes (Status and
	// holdfast_shards_unplaceable show them) until one with the tags
	// joins. Setting an existing name replaces the rule.
	ActionSetShardRule = wire.ActionShardRule
	// ActionClearShardRule removes the placement rule Target.
	ActionClearShardRule = wire.ActionShardUnrule
)

// ShardRule is a placement rule as the replica shows it.
type ShardRule struct {
	// Name names the rule.
	Name string
	// First and Last bound the shards it covers, inclusive.
	First, Last ShardID
	// Require lists the tags an owner must carry.
	Require []string
}

// String is the rule as ActionSetShardRule reads it.
func (r ShardRule) String() string {
	return shardown.RuleString(shardown.Rule{First: r.First, Last: r.Last, Require: r.Require})
}

// ShardRules returns the placement rules this node's replica shows, in
// name order.
func (c *Coordinator) ShardRules() []ShardRule {
	rules := c.fsm.View().Rules()
	out := make([]ShardRule, len(rules))
	for i, r := range rules {
		out[i] = ShardRule{Name: r.Name, First: ShardID(r.First), Last: ShardID(r.Last), Require: slices.Clone(r.Require)}
	}
	return out
}

// SetShardRule sets the placement rule name to rule (ActionSetShardRule
// through Operate).
func (c *Coordinator) SetShardRule(ctx context.Context, name, rule string) (OperationResult, error) {
	return c.Operate(ctx, Operation{Action: ActionSetShardRule, Target: name, Rule: rule})
}

// ClearShardRule removes the placement rule name (ActionClearShardRule
// through Operate).
func (c *Coordinator) ClearShardRule(ctx context.Context, name string) (OperationResult, error) {
	return c.Operate(ctx, Operation{Action: ActionClearShardRule, Target: name})
}

// placementTags are the tags this node's sessions carry: Shards.Tags and
// its zone's.
func (c Config) placementTags() []string {
	tags := slices.Clone(c.Shards.Tags)
	if z := shardown.ZoneTag(c.Zone); c.Zone != "" && !slices.Contains(tags, z) {
		tags = append(tags, z)
	}
	return tags
}

// maxGossipedTags bounds Shards.Tags joined by commas, which the node's
// gossip metadata carries (memberlist allows 512 bytes in all).
const maxGossipedTags = 192

// checkTags validates Shards.Tags and the zone's tag.
func (c Config) checkTags() error {
	tags := c.placementTags()
	if len(tags) > fsm.MaxTags {
		return fieldErr("Shards.Tags", "has %d tags with the zone's; at most %d", len(tags), fsm.MaxTags)
	}
	if n := len(strings.Join(c.Shards.Tags, ",")); n > maxGossipedTags {
		return fieldErr("Shards.Tags", "are %d bytes together (comma-separated); at most %d: they are gossiped in the node's metadata", n, maxGossipedTags)
	}
	for _, t := range tags {
		if why := fsm.ValidTag(t); why != "" {
			return fieldErr("Shards.Tags", "%s", why)
		}
	}
	return nil
}
