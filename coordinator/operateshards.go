package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/wire"
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
