package coordinator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/shardown"
)

// The operator's shard placement actions (Operation.Action, with
// Operation.Shard and, but for a plan, Operation.Target naming the node).
const (
	// ActionPinShard pins shard Shard to node Target (by name): the
	// balancer hands it there (a fenced handoff, not limited by
	// Shards.MaxMoves) and keeps it there while the node has a live
	// session, across the node's restarts and leader changes, until
	// unpinned. While the node is down or drained the shard is placed as
	// any other.
	ActionPinShard = wire.ActionShardPin
	// ActionUnpinShard removes shard Shard's pin (or pending move).
	ActionUnpinShard = wire.ActionShardUnpin
	// ActionMoveShard hands shard Shard to node Target now: a one-off pin
	// that the leader clears once the shard is owned there, after which
	// the balancer may place it again as balance requires (pin it to keep
	// it there). Operate returns once the shard is owned on Target, with
	// its new token, or when ctx ends (the move then goes on).
	ActionMoveShard = wire.ActionShardMove
	// ActionPlanShards returns the balancer's next round, committing
	// nothing: what it would move and why, and each node's load and target
	// (OperationResult.Plan).
	ActionPlanShards = wire.ActionShardPlan
)

// leaderShardPlan asks this leader's balancer for its next round.
func (c *Coordinator) leaderShardPlan(ctx context.Context) (wire.OperateReply, error) {
	reply := make(chan *shards.PlanReport, 1)
	// The balancer takes requests between rounds; a leader whose balancer
	// is not running (its term just began or ended) answers within
	// RPCTimeout.
	take, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
	defer cancel()
	select {
	case c.loads.previews <- shards.PreviewRequest{Reply: reply}:
	case <-take.Done():
		return wire.OperateReply{}, fmt.Errorf("the balancer did not take the request: %w", take.Err())
	}
	var rep *shards.PlanReport
	select {
	case rep = <-reply:
	case <-ctx.Done():
		return wire.OperateReply{}, ctx.Err()
	}
	plan := &wire.PlanReply{AtNanos: time.Now().UnixNano()}
	if rep == nil {
		plan.Waiting = "the balancer would not plan now: no shards yet, or it waits for the sessions an earlier leader knew to be heard from"
		return wire.OperateReply{Plan: plan, Message: plan.Waiting}, nil
	}
	plan.AtNanos, plan.ByLoad, plan.Unowned = rep.At.UnixNano(), rep.ByLoad, rep.Unowned
	for _, m := range rep.Members {
		plan.Nodes = append(plan.Nodes, wire.PlanNode{Node: m.Node, Session: m.ID, Capacity: m.Capacity, Shards: m.Shards, Planned: m.Planned,
			Load: m.Load, PlannedLoad: m.PlannedLoad, Target: m.Target, Eligible: m.Eligible, Stuck: m.Stuck})
	}
	for _, m := range rep.Moves {
		plan.Moves = append(plan.Moves, wire.PlanMove{Shard: uint32(m.Shard), From: m.From, To: m.To, Reason: m.Reason})
	}
	for _, u := range rep.Unplaceable {
		if u.Waiting {
			plan.UnplaceableWaiting = append(plan.UnplaceableWaiting, uint32(u.Shard))
		} else {
			plan.Unplaceable = append(plan.Unplaceable, uint32(u.Shard))
		}
	}
	return wire.OperateReply{Plan: plan, Message: fmt.Sprintf("the next round would start %d moves", len(plan.Moves))}, nil
}

// placementOf turns a wire plan into a Placement.
func placementOf(p *wire.PlanReply) *Placement {
	if p == nil {
		return nil
	}
	out := &Placement{At: time.Unix(0, p.AtNanos), ByLoad: p.ByLoad, Unowned: p.Unowned, Waiting: p.Waiting}
	for _, n := range p.Nodes {
		out.Nodes = append(out.Nodes, NodePlacement{Node: n.Node, Session: n.Session, Capacity: n.Capacity, Shards: n.Shards, Planned: n.Planned,
			Load: n.Load, PlannedLoad: n.PlannedLoad, Target: n.Target, Eligible: n.Eligible, Stuck: n.Stuck})
	}
	for _, m := range p.Moves {
		out.Moves = append(out.Moves, PlacementMove{Shard: ShardID(m.Shard), From: m.From, To: m.To, Reason: m.Reason})
	}
	for _, s := range p.Unplaceable {
		out.Unplaceable = append(out.Unplaceable, ShardID(s))
	}
	for _, s := range p.UnplaceableWaiting {
		out.UnplaceableWaiting = append(out.UnplaceableWaiting, ShardID(s))
	}
	return out
}

// PinShard pins shard to node (ActionPinShard through Operate).
func (c *Coordinator) PinShard(ctx context.Context, shard ShardID, node string) (OperationResult, error) {
	return c.Operate(ctx, Operation{Action: ActionPinShard, Shard: shard, Target: node})
}

// UnpinShard removes shard's pin (ActionUnpinShard through Operate).
func (c *Coordinator) UnpinShard(ctx context.Context, shard ShardID) (OperationResult, error) {
	return c.Operate(ctx, Operation{Action: ActionUnpinShard, Shard: shard})
}

// MoveShard hands shard to node now and returns once it is owned there
// (ActionMoveShard through Operate).
func (c *Coordinator) MoveShard(ctx context.Context, shard ShardID, node string) (OperationResult, error) {
	return c.Operate(ctx, Operation{Action: ActionMoveShard, Shard: shard, Target: node})
}

// PlanShards returns the raft leader's next balancing round, committing
// nothing (ActionPlanShards through Operate). On the same table, sessions
// and load reports, the next round starts exactly these moves; a change in
// between (a release, a join, a new report, a join stabilization that
// ends) changes the round.
func (c *Coordinator) PlanShards(ctx context.Context) (Placement, error) {
	res, err := c.Operate(ctx, Operation{Action: ActionPlanShards})
	if err != nil || res.Plan == nil {
		return Placement{}, err
	}
	return *res.Plan, nil
}

// ShardPin is an operator's pin of a shard to a node (see ActionPinShard),
// or a move not completed yet (Once).
type ShardPin struct {
	Shard ShardID
	// Node is the name of the node the shard is pinned to.
	Node string
	// Once says the pin is a move (ActionMoveShard): the leader clears it
	// once the shard is owned on Node.
	Once bool
}

// ShardPins returns the shard pins this node's replica shows, in shard
// order.
func (c *Coordinator) ShardPins() []ShardPin {
	pins := c.fsm.View().Pins()
	out := make([]ShardPin, len(pins))
	for i, p := range pins {
		out[i] = ShardPin{Shard: ShardID(p.Shard), Node: p.Node, Once: p.Once}
	}
	return out
}

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

// DefaultLoadHalfLife is Config.Shards.LoadHalfLife when it is zero.
const DefaultLoadHalfLife = 30 * time.Second

// shardLoads is this node's part in balancing by load: the meter that
// smooths the loads its shard leases report (sent on keepalives), and, for
// the terms it leads, the book of the loads its sessions reported.
type shardLoads struct {
	meter *shards.LoadMeter
	book  shards.LoadBook
	plan  atomic.Pointer[shards.PlanReport] // the leader's latest round; nil when not leading
	// previews carries plan requests to the balancer of this node's
	// leader term (taken only while it runs).
	previews chan shards.PreviewRequest
}

func newShardLoads(cfg ShardConfig) *shardLoads {
	hl := cfg.LoadHalfLife
	if hl == 0 {
		hl = DefaultLoadHalfLife
	}
	return &shardLoads{meter: shards.NewLoadMeter(hl), previews: make(chan shards.PreviewRequest)}
}

// ReportLoad tells the leader how loaded this shard is now: requests,
// bytes or work per second, in any unit as long as every node uses the
// same one. Report as often as is convenient (every few seconds is
// plenty): this node smooths the reports with an exponentially weighted
// moving average whose half-life is Config.Shards.LoadHalfLife, and sends
// the averages of the shards it owns with its session keepalives. Nothing
// is committed to raft; the leader keeps the last reports in memory and,
// once any shard has one, balances by load instead of by count (a shard
// without a report counts as the mean of those with one). A new leader
// starts without reports, so placement is by count until the next
// keepalives arrive. A report after the lease ended, or a negative, NaN or
// infinite load, is ignored.
func (l *ShardLease) ReportLoad(load float64) {
	if l.Context().Err() != nil {
		return
	}
	l.belief.env.loads.meter.Observe(uint32(l.Shard()), load, time.Now())
}

// recordLocalLoads is the local path of a keepalive this node, the leader,
// answered for its own session id: its loads go straight into the book.
func (c *Coordinator) recordLocalLoads(id string) {
	if s, l := c.loads.meter.Report(); len(s) > 0 {
		c.loads.book.Record(id, s, l)
	}
}

// balancerLoads is BalancerOptions.Loads: each shard's load as an owner
// (the current one, or before its first report the one before) last
// reported.
func (c *Coordinator) balancerLoads(v *fsm.View, dst []float64) []float64 {
	return c.loads.book.Loads(v.ShardCount(), dst)
}

// Placement is the leader's latest planning round: how each node stood,
// where the balancer aims it and the moves the round started. Loads and
// targets are in the unit of ShardLease.ReportLoad when ByLoad, else in
// shards.
type Placement struct {
	// At is when the round ran.
	At time.Time
	// ByLoad says whether any shard had a load report (else the round
	// balanced by count).
	ByLoad bool
	// Nodes are the sessions that may own shards, in session ID order.
	Nodes []NodePlacement
	// Moves are the grants and handoffs the round started.
	Moves []PlacementMove
	// Unowned is the number of shards without an owner at the round.
	Unowned int
	// Waiting, in a plan (PlanShards), says why the balancer would not
	// plan now ("" when it would).
	Waiting string
	// Unplaceable are the shards whose placement rules (ShardRules) no
	// node with a session passes: they stay unowned until a node with the
	// tags joins or the rules change. UnplaceableWaiting are those that
	// only a node not eligible yet (joining, not heard from) passes: they
	// go there once it is.
	Unplaceable, UnplaceableWaiting []ShardID
}

// NodePlacement is one node's line of a Placement.
type NodePlacement struct {
	// Node is the node's name and Session its session ID.
	Node, Session string
	// Capacity is its Config.Shards.Weight (0 read as 1).
	Capacity float64
	// Shards is what it held at the round, Planned what it holds once
	// the round's moves are done.
	Shards, Planned int
	// Load, PlannedLoad and Target are its load before and after the
	// round's moves and the load the balancer aims it at.
	Load, PlannedLoad, Target float64
	// Eligible says whether it may receive shards (stable, heard from).
	Eligible bool
	// Stuck says that one shard alone puts it above the band: it should
	// carry that shard only.
	Stuck bool
}

// PlacementMove is one grant or handoff a round started.
type PlacementMove struct {
	Shard ShardID
	// From and To are session IDs; From is "" for a grant of a free shard.
	From, To string
	// Reason is "free" (the shard had no owner), "count" (a node was
	// outside its count bounds), "load" (outside the load band), "pin" (an
	// operator's pin or move), "rule" (its owner lacks the tags its
	// placement rules require) or "drain" (its owner is drained).
	Reason string
}

// Placement returns the latest planning round of this node's balancer,
// and false when this node does not lead (or has not planned yet in this
// term). The report lives in the leader's memory only.
func (c *Coordinator) Placement() (Placement, bool) {
	rep := c.loads.plan.Load()
	if rep == nil {
		return Placement{}, false
	}
	p := Placement{At: rep.At, ByLoad: rep.ByLoad, Unowned: rep.Unowned,
		Nodes: make([]NodePlacement, len(rep.Members)), Moves: make([]PlacementMove, len(rep.Moves))}
	for i, m := range rep.Members {
		p.Nodes[i] = NodePlacement{Node: m.Node, Session: m.ID, Capacity: m.Capacity, Shards: m.Shards, Planned: m.Planned,
			Load: m.Load, PlannedLoad: m.PlannedLoad, Target: m.Target, Eligible: m.Eligible, Stuck: m.Stuck}
	}
	for i, m := range rep.Moves {
		p.Moves[i] = PlacementMove{Shard: m.Shard, From: m.From, To: m.To, Reason: m.Reason}
	}
	for _, u := range rep.Unplaceable {
		if u.Waiting {
			p.UnplaceableWaiting = append(p.UnplaceableWaiting, u.Shard)
		} else {
			p.Unplaceable = append(p.Unplaceable, u.Shard)
		}
	}
	return p, true
}
