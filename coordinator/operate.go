package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// The operator actions Operate carries out (Operation.Action).
const (
	// ActionDrain drains node Target (Drain on that node): it hands every
	// shard it owns to the others and takes none until undrained.
	ActionDrain = wire.ActionDrain
	// ActionUndrain lets node Target own shards again (Undrain on it).
	ActionUndrain = wire.ActionUndrain
	// ActionReleaseLease ends the current grant of lease Target.
	ActionReleaseLease = wire.ActionReleaseLease
	// ActionStepDown hands raft leadership to another voter.
	ActionStepDown = wire.ActionStepDown
	// ActionRemovePeer takes server Target (a node name or raft ID) out of
	// the raft configuration.
	ActionRemovePeer = wire.ActionRemovePeer
)

// ErrOperationRefused is wrapped by Operate's error when the leader would
// not carry the action out; nothing changed, and the error says why.
var ErrOperationRefused = errors.New("holdfast: operation refused")

// Operation is an operator's action on the cluster (see Operate).
type Operation struct {
	// Action is one of the Action constants.
	Action string
	// Target is the node (its name or ID) to drain, undrain or remove, or
	// the name of the lease to release; empty for a step-down.
	Target string
	// Force, with ActionRemovePeer, removes a node that gossip shows
	// alive (the leader then adds it back as a non-voter while it stays
	// alive: a way to take the vote from a wedged voter).
	Force bool
	// By says who asked, for the leader's log: the client certificate's
	// name, a remote address (package admin fills it in).
	By string
	// Shard is the shard of ActionPinShard, ActionUnpinShard and
	// ActionMoveShard.
	Shard ShardID
}

// OperationResult is what the raft leader did for an Operation.
type OperationResult struct {
	// Leader and LeaderID name the raft leader that carried it out.
	Leader, LeaderID string
	// Node and NodeID name the node acted on (drain, undrain, remove-peer),
	// or the new raft leader after a step-down ("" if not known yet).
	Node, NodeID string
	// Token is the grant a lease release ended. Graceful is true when its
	// holder's node ended its belief first and released it itself; false
	// when that node did not answer and the leader committed the release
	// without it (the holder may then still believe it holds the lease
	// until its node applies the release or its session lapses: only the
	// fenced resource, which refuses the old token once the next holder
	// has written, protects against it meanwhile).
	Token    uint64
	Graceful bool
	// Promoted is the voter promoted in a removed voter's place ("" for
	// none).
	Promoted string
	// Message says in one line what was done.
	Message string
	// Plan is ActionPlanShards' answer.
	Plan *Placement
}

// Operate carries out an operator's action through the raft leader, which
// logs it with op.By and the node that passed it on, on this node when it
// leads and over RPC otherwise (retrying while no leader is known or it
// moves, until ctx ends):
//
//   - ActionDrain, ActionUndrain: the leader asks node op.Target to Drain
//     (waiting until it owns no shard) or Undrain itself.
//   - ActionReleaseLease: the current grant of lease op.Target ends; the
//     lease passes to its next waiter with a new token. The leader asks
//     the holder's node to release it (its belief ends first, with a
//     cause wrapping ErrReleased that names the operator), and commits the
//     release itself when that node does not answer within RPCTimeout.
//   - ActionStepDown: the leader hands leadership to another voter.
//   - ActionRemovePeer: the leader takes server op.Target out of the raft
//     configuration, promoting a replacement first when one is ready, as
//     Leave does, and refuses when the voters left could not form a quorum,
//     when it is the leader itself (step it down first), or when gossip
//     shows it alive (Leave on that node hands its shards off first),
//     unless op.Force.
//
// A refusal wraps ErrOperationRefused and changes nothing.
func (c *Coordinator) Operate(ctx context.Context, op Operation) (OperationResult, error) {
	switch op.Action {
	case ActionDrain, ActionUndrain, ActionReleaseLease, ActionRemovePeer, ActionPinShard, ActionMoveShard:
		if op.Target == "" {
			return OperationResult{}, fmt.Errorf("%w: %s needs a target", ErrOperationRefused, op.Action)
		}
	case ActionStepDown, ActionUnpinShard, ActionPlanShards:
	default:
		return OperationResult{}, fmt.Errorf("%w: unknown action %q", ErrOperationRefused, op.Action)
	}
	if c.closing() {
		return OperationResult{}, ErrShutdown
	}
	req := wire.OperateRequest{Action: op.Action, Target: op.Target, Force: op.Force, By: op.By, Via: c.cfg.NodeName, Shard: uint32(op.Shard)}
	for {
		var rep wire.OperateReply
		var err error
		addr, self := c.node.LeaderRPCAddr()
		switch {
		case self:
			rep, err = c.operateAsLeader(ctx, req)
		case addr != "":
			err = wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodOperate, req, &rep))
		default:
			err = wire.ErrNoLeader
		}
		if err == nil || !(errors.Is(err, wire.ErrNotLeader) || errors.Is(err, wire.ErrNoLeader)) {
			return operationResult(rep, err)
		}
		if !pause.For(ctx, 50*time.Millisecond) {
			return OperationResult{}, fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}

// operationResult turns the leader's reply into Operate's answer.
func operationResult(rep wire.OperateReply, err error) (OperationResult, error) {
	if err != nil {
		return OperationResult{}, err
	}
	if rep.Refused != "" {
		return OperationResult{}, fmt.Errorf("%w: %s", ErrOperationRefused, strings.TrimPrefix(rep.Refused, "holdfast: "))
	}
	return OperationResult{Leader: rep.Leader, LeaderID: rep.LeaderID, Node: rep.Node, NodeID: rep.NodeID, Token: rep.Token,
		Graceful: rep.Graceful, Promoted: rep.Promoted, Message: rep.Message, Plan: placementOf(rep.Plan)}, nil
}

// serveOperate answers wire.MethodOperate: a node's request to this
// leader, or the leader's request to act on this node (Local).
func (c *Coordinator) serveOperate(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	if req.Local {
		return c.operateLocal(ctx, req)
	}
	if _, self := c.node.LeaderRPCAddr(); !self {
		addr, _ := c.node.LeaderRPCAddr()
		return wire.OperateReply{}, &wire.NotLeaderError{Leader: addr}
	}
	return c.operateAsLeader(ctx, req)
}

// operateAsLeader carries out req on this node, the raft leader, logging
// who asked and what came of it.
func (c *Coordinator) operateAsLeader(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	log := c.log.With("action", req.Action, "target", req.Target, "by", req.By, "via", req.Via)
	log.Info("operator action requested")
	var rep wire.OperateReply
	var err error
	switch req.Action {
	case ActionDrain, ActionUndrain:
		rep, err = c.leaderDrain(ctx, req)
	case ActionReleaseLease:
		rep, err = c.leaderReleaseLease(ctx, req)
	case ActionStepDown:
		rep, err = c.leaderStepDown(ctx)
	case ActionRemovePeer:
		rep, err = c.leaderRemovePeer(ctx, req)
	case ActionPinShard, ActionUnpinShard, ActionMoveShard:
		rep, err = c.leaderShardPlacement(ctx, req)
	case ActionPlanShards:
		rep, err = c.leaderShardPlan(ctx)
	default:
		rep.Refused = fmt.Sprintf("unknown action %q", req.Action)
	}
	rep.Leader, rep.LeaderID = c.cfg.NodeName, c.id
	switch {
	case err != nil:
		log.Warn("operator action failed", "error", err)
	case rep.Refused != "":
		log.Info("operator action refused", "reason", rep.Refused)
	default:
		log.Info("operator action done", "result", rep.Message)
	}
	return rep, err
}
