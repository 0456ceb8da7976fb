package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
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
	// Rule is ActionSetShardRule's rule, "FIRST-LAST:TAG[,TAG...]" (or
	// "SHARD:TAG..."); Target is then the rule's name.
	Rule string
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
//   - ActionPinShard, ActionUnpinShard, ActionMoveShard, ActionPlanShards:
//     the operator's shard placement (see each), op.Shard naming the
//     shard and op.Target the node.
//   - ActionSetShardRule, ActionClearShardRule: placement rule op.Target
//     set to op.Rule, or removed.
//
// A refusal wraps ErrOperationRefused and changes nothing.
func (c *Coordinator) Operate(ctx context.Context, op Operation) (OperationResult, error) {
	switch op.Action {
	case ActionDrain, ActionUndrain, ActionReleaseLease, ActionRemovePeer, ActionPinShard, ActionMoveShard,
		ActionSetShardRule, ActionClearShardRule:
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
	req := wire.OperateRequest{Action: op.Action, Target: op.Target, Force: op.Force, By: op.By, Via: c.cfg.NodeName, Shard: uint32(op.Shard), Rule: op.Rule}
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
	case ActionSetShardRule, ActionClearShardRule:
		rep, err = c.leaderShardRule(ctx, req)
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

// The leader's side of Operate: each action, and the part a node plays
// when the leader asks it to act on itself (operateLocal).

// aliveMember finds the member named target (by name or ID) that gossip
// shows alive.
func (c *Coordinator) aliveMember(target string) (Member, bool) {
	for _, m := range c.Members() {
		if (m.Name == target || m.ID == target) && m.State == MemberAlive {
			return m, true
		}
	}
	return Member{}, false
}

// askNode sends req to node m to act on itself (or runs it here when m is
// this node).
func (c *Coordinator) askNode(ctx context.Context, m Member, req wire.OperateRequest) (wire.OperateReply, error) {
	req.Local = true
	if m.ID == c.id {
		return c.operateLocal(ctx, req)
	}
	var rep wire.OperateReply
	err := wire.FromRemote(c.trans.Call(ctx, m.RPCAddr, wire.MethodOperate, req, &rep))
	return rep, err
}

// leaderDrain asks node req.Target to drain or undrain itself.
func (c *Coordinator) leaderDrain(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	m, ok := c.aliveMember(req.Target)
	if !ok {
		return wire.OperateReply{Refused: fmt.Sprintf("no live member %q: holdfastctl members lists them", req.Target)}, nil
	}
	rep, err := c.askNode(ctx, m, req)
	if err != nil {
		return rep, fmt.Errorf("asking %s to %s: %w", m.Name, req.Action, err)
	}
	rep.Node, rep.NodeID = m.Name, m.ID
	return rep, nil
}

// operateLocal is a node acting on itself at the leader's request: a
// drain, an undrain, the release of one of its leases.
func (c *Coordinator) operateLocal(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	log := c.log.With("action", req.Action, "by", req.By, "via", req.Via)
	switch req.Action {
	case ActionDrain, ActionUndrain:
		if req.Target != c.cfg.NodeName && req.Target != c.id {
			return wire.OperateReply{Refused: fmt.Sprintf("this node is %s, not %s", c.cfg.NodeName, req.Target)}, nil
		}
		log.Info("operator action on this node, at the raft leader's request")
		if req.Action == ActionUndrain {
			if err := c.Undrain(ctx); err != nil {
				return wire.OperateReply{}, err
			}
			return wire.OperateReply{Message: c.cfg.NodeName + " undrained: it takes shards again"}, nil
		}
		if err := c.Drain(ctx); err != nil {
			return wire.OperateReply{}, err
		}
		return wire.OperateReply{Message: c.cfg.NodeName + " drained: it owns no shard and takes none until undrained"}, nil
	case ActionReleaseLease:
		log.Info("operator action on this node, at the raft leader's request", "lease", req.Target, "token", req.Token)
		cause := fmt.Errorf("%w at an operator's request (by %s)", ErrReleased, cmp.Or(req.By, "an unnamed operator"))
		found, err := c.leases.ReleaseHeld(ctx, req.Target, req.Token, cause)
		switch {
		case err != nil:
			return wire.OperateReply{}, err
		case !found:
			return wire.OperateReply{Refused: fmt.Sprintf("%s holds no grant %d of %q", c.cfg.NodeName, req.Token, req.Target)}, nil
		}
		return wire.OperateReply{Graceful: true}, nil
	}
	return wire.OperateReply{Refused: fmt.Sprintf("action %q is not one a node carries out on itself", req.Action)}, nil
}

// leaderReleaseLease ends the current grant of lease req.Target: its
// holder's node releases it when it answers within RPCTimeout, else this
// leader commits the release in the holder's name.
func (c *Coordinator) leaderReleaseLease(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	l, ok := c.fsm.View().Lease(req.Target)
	if !ok {
		return wire.OperateReply{Refused: fmt.Sprintf("lease %q is not held", req.Target)}, nil
	}
	rep := wire.OperateReply{Node: l.HolderNode, NodeID: l.HolderNodeID, Token: l.Token}
	if m, ok := c.aliveMember(l.HolderNodeID); ok {
		actx, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
		ask := req
		ask.Token = l.Token
		got, err := c.askNode(actx, m, ask)
		cancel()
		if err == nil && got.Refused == "" {
			rep.Graceful = true
			rep.Message = fmt.Sprintf("released lease %q (token %d) held by %s: its node ended its belief, then released it", req.Target, l.Token, l.HolderNode)
			return rep, nil
		}
		c.log.Info("the lease's holder did not release it; releasing it without its node", "lease", req.Target, "holder", l.HolderNode,
			"error", err, "refused", got.Refused)
	}
	cmd := fsm.Command{Op: fsm.OpRelease, Lease: &fsm.LeaseCmd{Name: req.Target, Session: l.Holder, Request: l.Request, Token: l.Token}}
	if _, err := c.commitRetry(ctx, cmd); err != nil {
		return rep, fmt.Errorf("committing the release of %q: %w", req.Target, err)
	}
	rep.Message = fmt.Sprintf("released lease %q (token %d) held by %s without its node, which did not answer: it may believe it "+
		"holds the lease until it applies the release or its session lapses; fenced resources refuse token %d once the next holder writes",
		req.Target, l.Token, l.HolderNode, l.Token)
	return rep, nil
}

// leaderStepDown hands raft leadership to another voter and names it.
func (c *Coordinator) leaderStepDown(ctx context.Context) (wire.OperateReply, error) {
	if len(c.Voters()) < 2 {
		return wire.OperateReply{Refused: "no other voter to take over"}, nil
	}
	c.node.TransferLeadership(ctx)
	if c.RaftState() == StateLeader {
		return wire.OperateReply{}, errors.New("the leadership transfer did not complete (the leader's log says why); this node still leads")
	}
	rep := wire.OperateReply{Message: c.cfg.NodeName + " stepped down"}
	wait, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
	defer cancel()
	for {
		if l, ok := c.RaftLeader(); ok && l.ID != c.id {
			rep.Node, rep.NodeID = l.Name, l.ID
			rep.Message += "; the raft leader is now " + cmp.Or(l.Name, l.ID)
			return rep, nil
		}
		if !pause.For(wait, 20*time.Millisecond) {
			return rep, nil // stepped down; the next leader is not known here yet
		}
	}
}

// leaderRemovePeer takes server req.Target out of the raft configuration
// (see Operate for the refusals).
func (c *Coordinator) leaderRemovePeer(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	var id string
	var all []string
	for _, s := range append(c.Voters(), c.NonVoters()...) {
		name := c.cluster.NameOf(s)
		all = append(all, cmp.Or(name, s))
		if s == req.Target || (name != "" && name == req.Target) {
			id = s
		}
	}
	switch {
	case id == "":
		return wire.OperateReply{Refused: fmt.Sprintf("no server %q in the raft configuration (it has %s)", req.Target, strings.Join(all, ", "))}, nil
	case id == c.id:
		return wire.OperateReply{Refused: fmt.Sprintf("%s is the raft leader: step it down first (holdfastctl raft step-down), "+
			"or decommission it with holdfastctl leave", req.Target)}, nil
	}
	name := cmp.Or(c.cluster.NameOf(id), id)
	if _, alive := c.aliveMember(id); alive && !req.Force {
		return wire.OperateReply{Refused: fmt.Sprintf("%s is alive: decommission it with holdfastctl -addr ITS_ADMIN_ADDRESS -confirm %s leave, "+
			"which hands its shards off first; remove-peer is for a server that is gone (-force removes it anyway, and the leader "+
			"adds it back as a non-voter while it stays alive)", name, name)}, nil
	}
	lr, err := c.cluster.Decommission(ctx, wire.LeaveRequest{ID: id, Force: true})
	if errors.Is(err, ErrLeaveRefused) {
		return wire.OperateReply{Refused: strings.TrimPrefix(err.Error(), ErrLeaveRefused.Error()+": ")}, nil
	}
	if err != nil {
		return wire.OperateReply{}, err
	}
	rep := wire.OperateReply{Node: name, NodeID: id, Promoted: cmp.Or(c.cluster.NameOf(lr.Promoted), lr.Promoted),
		Message: fmt.Sprintf("removed %s from the raft configuration", name)}
	if rep.Promoted != "" {
		rep.Message += "; " + rep.Promoted + " was promoted to voter in its place"
	}
	return rep, nil
}
