package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// Options are an Operator's neighbours.
type Options struct {
	// NodeName and ID name this node.
	NodeName, ID string
	// RPCTimeout bounds the wait for a lease holder's node to release it,
	// and for a new leader after a step-down.
	RPCTimeout time.Duration
	// Log is where actions are logged.
	Log *slog.Logger
	// Call makes an RPC to the node at addr (the transport's Call).
	Call func(ctx context.Context, addr, method string, req, resp any) error
	// Raft is this node's raft host.
	Raft Raft
	// RaftLeader names the raft leader this node knows (ok false: none).
	RaftLeader func() (name, id string, ok bool)
	// Leading reports whether this node is the raft leader.
	Leading func() bool
	// Members lists the gossip members.
	Members func() []membership.Member
	// Cluster is the raft configuration's servers, as the cluster part
	// keeps them.
	Cluster Cluster
	// View is the replica's current state.
	View func() *fsm.View
	// Commit commits an idempotent command, retrying while its outcome is
	// unknown.
	Commit func(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error)
	// Drain and Undrain drain or undrain this node (waiting, for a drain,
	// until it owns no shard).
	Drain, Undrain func(ctx context.Context) error
	// ReleaseHeld releases this node's grant token of lease name with
	// cause; found is false when this node holds no such grant.
	ReleaseHeld func(ctx context.Context, name string, token uint64, cause error) (found bool, err error)
	// CommitLeader commits cmd on this node, the leader (a shard pin or a
	// placement rule: a command that changes nothing when applied twice);
	// when the leadership is lost before the commit is known, its error
	// wraps wire.ErrNotLeader, and Operate asks the next leader again.
	CommitLeader func(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error)
	// Expiring reports whether the leader is expiring session id (or its
	// deadline has passed): it may not receive a pinned or moved shard.
	Expiring func(id string) bool
	// Plan answers a shard plan (the balancer's preview of its next round).
	Plan func(ctx context.Context) (wire.OperateReply, error)
}

// Raft is what an Operator needs of this node's raft host.
type Raft interface {
	// LeaderRPCAddr is the raft leader's RPC address, and whether this
	// node leads.
	LeaderRPCAddr() (addr string, self bool)
	// TransferLeadership hands raft leadership to another voter.
	TransferLeadership(ctx context.Context)
}

// Cluster is what an Operator needs of the cluster part.
type Cluster interface {
	// Voters and NonVoters list the raft configuration's servers by ID.
	Voters() []string
	NonVoters() []string
	// NameOf names a server ("" when gossip does not know it).
	NameOf(id string) string
	// Decommission takes a server out of the raft configuration; a
	// refusal wraps wire.ErrLeaveRefused.
	Decommission(ctx context.Context, req wire.LeaveRequest) (wire.LeaveReply, error)
}

// Operator carries out operators' actions (see the package doc).
type Operator struct{ o Options }

// New returns an Operator over o.
func New(o Options) *Operator { return &Operator{o: o} }

// Operate passes req to the raft leader (this node when it leads, over RPC
// otherwise), retrying every 50ms while no leader is known or it moves,
// until ctx ends; it returns the leader's reply, whose Refused says why
// the leader would not carry the action out.
func (p *Operator) Operate(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	for {
		var rep wire.OperateReply
		var err error
		addr, self := p.o.Raft.LeaderRPCAddr()
		switch {
		case self:
			rep, err = p.asLeader(ctx, req)
		case addr != "":
			err = wire.FromRemote(p.o.Call(ctx, addr, wire.MethodOperate, req, &rep))
		default:
			err = wire.ErrNoLeader
		}
		if err == nil || !(errors.Is(err, wire.ErrNotLeader) || errors.Is(err, wire.ErrNoLeader)) {
			return rep, err
		}
		if !pause.For(ctx, 50*time.Millisecond) {
			return wire.OperateReply{}, fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}

// Serve answers wire.MethodOperate: a node's request to this leader, or
// the leader's request to act on this node (Local).
func (p *Operator) Serve(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	if req.Local {
		return p.local(ctx, req)
	}
	if _, self := p.o.Raft.LeaderRPCAddr(); !self {
		addr, _ := p.o.Raft.LeaderRPCAddr()
		return wire.OperateReply{}, &wire.NotLeaderError{Leader: addr}
	}
	return p.asLeader(ctx, req)
}

// asLeader carries out req on this node, the raft leader, logging who
// asked and what came of it.
func (p *Operator) asLeader(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	log := p.o.Log.With("action", req.Action, "target", req.Target, "by", req.By, "via", req.Via)
	log.Info("operator action requested")
	var rep wire.OperateReply
	var err error
	switch req.Action {
	case wire.ActionDrain, wire.ActionUndrain:
		rep, err = p.drain(ctx, req)
	case wire.ActionReleaseLease:
		rep, err = p.releaseLease(ctx, req)
	case wire.ActionStepDown:
		rep, err = p.stepDown(ctx)
	case wire.ActionRemovePeer:
		rep, err = p.removePeer(ctx, req)
	case wire.ActionShardPin, wire.ActionShardUnpin, wire.ActionShardMove:
		rep, err = p.shardPlacement(ctx, req)
	case wire.ActionShardRule, wire.ActionShardUnrule:
		rep, err = p.shardRule(ctx, req)
	case wire.ActionShardPlan:
		rep, err = p.o.Plan(ctx)
	default:
		rep.Refused = fmt.Sprintf("unknown action %q", req.Action)
	}
	rep.Leader, rep.LeaderID = p.o.NodeName, p.o.ID
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

// aliveMember finds the member named target (by name or ID) that gossip
// shows alive.
func (p *Operator) aliveMember(target string) (membership.Member, bool) {
	for _, m := range p.o.Members() {
		if (m.Name == target || m.Meta.NodeID == target) && m.State == membership.Alive {
			return m, true
		}
	}
	return membership.Member{}, false
}

// askNode sends req to node m to act on itself (or runs it here when m is
// this node).
func (p *Operator) askNode(ctx context.Context, m membership.Member, req wire.OperateRequest) (wire.OperateReply, error) {
	req.Local = true
	if m.Meta.NodeID == p.o.ID {
		return p.local(ctx, req)
	}
	var rep wire.OperateReply
	err := wire.FromRemote(p.o.Call(ctx, m.Meta.RPCAddr, wire.MethodOperate, req, &rep))
	return rep, err
}

// Check says what is wrong with an operator's action before it is sent
// ("" for nothing): an unknown action, or one that needs a target without
// one.
func Check(action, target string) string {
	switch action {
	case wire.ActionDrain, wire.ActionUndrain, wire.ActionReleaseLease, wire.ActionRemovePeer, wire.ActionShardPin, wire.ActionShardMove,
		wire.ActionShardRule, wire.ActionShardUnrule:
		if target == "" {
			return action + " needs a target"
		}
	case wire.ActionStepDown, wire.ActionShardUnpin, wire.ActionShardPlan:
	default:
		return fmt.Sprintf("unknown action %q", action)
	}
	return ""
}
