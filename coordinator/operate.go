package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/operator"
	"github.com/holdfast-go/holdfast/internal/raftnode"
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
	// Leader is the raft leader that carried it out.
	Leader Node
	// Node is the node acted on (drain, undrain, remove-peer), or the new
	// raft leader after a step-down (empty if not known yet).
	Node Node
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
	if msg := operator.Check(op.Action, op.Target); msg != "" {
		return OperationResult{}, fmt.Errorf("%w: %s", ErrOperationRefused, msg)
	}
	if c.closing() {
		return OperationResult{}, ErrShutdown
	}
	req := wire.OperateRequest{Action: op.Action, Target: op.Target, Force: op.Force, By: op.By, Via: c.cfg.NodeName, Shard: uint32(op.Shard),
		Rule: op.Rule}
	return operationResult(c.ops.Operate(ctx, req))
}

// operationResult turns the leader's reply into Operate's answer.
func operationResult(rep wire.OperateReply, err error) (OperationResult, error) {
	if err != nil {
		return OperationResult{}, err
	}
	if rep.Refused != "" {
		return OperationResult{}, fmt.Errorf("%w: %s", ErrOperationRefused, strings.TrimPrefix(rep.Refused, "holdfast: "))
	}
	return OperationResult{Leader: Node{Name: rep.Leader, ID: rep.LeaderID}, Node: Node{Name: rep.Node, ID: rep.NodeID}, Token: rep.Token,
		Graceful: rep.Graceful, Promoted: rep.Promoted, Message: rep.Message, Plan: placementOf(rep.Plan)}, nil
}

// newOperator builds the part that carries out operators' actions
// (internal/operator) over this node's raft, gossip, replica and parts;
// every part exists when start calls it.
func (c *Coordinator) newOperator() *operator.Operator {
	return operator.New(operator.Options{
		NodeName:   c.cfg.NodeName,
		ID:         c.id,
		RPCTimeout: c.cfg.RPCTimeout,
		Log:        c.log,
		Call:       c.trans.Call,
		Raft:       c.node,
		RaftLeader: func() (string, string, bool) {
			l, ok := c.RaftLeader()
			return l.Name, l.ID, ok
		},
		Leading:     func() bool { return c.RaftState() == StateLeader },
		Members:     c.members.Members,
		Cluster:     c.cluster,
		View:        c.fsm.View,
		Commit:      c.commitRetry,
		Drain:       c.Drain,
		Undrain:     c.Undrain,
		ReleaseHeld: c.leases.ReleaseHeld,
		CommitLeader: func(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error) {
			return idempotentOnLeader(c.node.CommitAsLeader(ctx, mustEncode(cmd)))
		},
		Expiring: func(id string) bool { return c.lessor.ExpiringOrDue(id, time.Now()) },
		Plan:     c.leaderShardPlan,
	})
}

// idempotentOnLeader turns CommitAsLeader's report that this node lost the
// leadership before the command's fate was known (raftnode.LeaderLost)
// into an error wrapping ErrNotLeader as well, which Operate answers by
// asking the next leader: the commands the operator commits as leader (a
// shard pin, a placement rule) change nothing when applied twice. Before,
// an unpin during a leader change failed with raft's "leadership lost
// while committing log".
func idempotentOnLeader(res wire.ApplyResult, err error) (wire.ApplyResult, error) {
	if raftnode.LeaderLost(err) {
		err = fmt.Errorf("%w (%w)", wire.ErrNotLeader, err)
	}
	return res, err
}
