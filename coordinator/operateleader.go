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
