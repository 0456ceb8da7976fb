package operator

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

// The leader's side of each action, and the part a node plays when the
// leader asks it to act on itself (local).

// drain asks node req.Target to drain or undrain itself.
func (p *Operator) drain(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	m, ok := p.aliveMember(req.Target)
	if !ok {
		return wire.OperateReply{Refused: fmt.Sprintf("no live member %q: holdfastctl members lists them", req.Target)}, nil
	}
	rep, err := p.askNode(ctx, m, req)
	if err != nil {
		return rep, fmt.Errorf("asking %s to %s: %w", m.Name, req.Action, err)
	}
	rep.Node, rep.NodeID = m.Name, m.Meta.NodeID
	return rep, nil
}

// local is a node acting on itself at the leader's request: a drain, an
// undrain, the release of one of its leases.
func (p *Operator) local(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	log := p.o.Log.With("action", req.Action, "by", req.By, "via", req.Via)
	name := p.o.NodeName
	switch req.Action {
	case wire.ActionDrain, wire.ActionUndrain:
		if req.Target != name && req.Target != p.o.ID {
			return wire.OperateReply{Refused: fmt.Sprintf("this node is %s, not %s", name, req.Target)}, nil
		}
		log.Info("operator action on this node, at the raft leader's request")
		if req.Action == wire.ActionUndrain {
			if err := p.o.Undrain(ctx); err != nil {
				return wire.OperateReply{}, err
			}
			return wire.OperateReply{Message: name + " undrained: it takes shards again"}, nil
		}
		if err := p.o.Drain(ctx); err != nil {
			return wire.OperateReply{}, err
		}
		return wire.OperateReply{Message: name + " drained: it owns no shard and takes none until undrained"}, nil
	case wire.ActionReleaseLease:
		log.Info("operator action on this node, at the raft leader's request", "lease", req.Target, "token", req.Token)
		cause := fmt.Errorf("%w at an operator's request (by %s)", wire.ErrReleased, cmp.Or(req.By, "an unnamed operator"))
		found, err := p.o.ReleaseHeld(ctx, req.Target, req.Token, cause)
		switch {
		case err != nil:
			return wire.OperateReply{}, err
		case !found:
			return wire.OperateReply{Refused: fmt.Sprintf("%s holds no grant %d of %q", name, req.Token, req.Target)}, nil
		}
		return wire.OperateReply{Graceful: true}, nil
	}
	return wire.OperateReply{Refused: fmt.Sprintf("action %q is not one a node carries out on itself", req.Action)}, nil
}

// releaseLease ends the current grant of lease req.Target: its holder's
// node releases it when it answers within RPCTimeout, else this leader
// commits the release in the holder's name.
func (p *Operator) releaseLease(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	l, ok := p.o.View().Lease(req.Target)
	if !ok {
		return wire.OperateReply{Refused: fmt.Sprintf("lease %q is not held", req.Target)}, nil
	}
	rep := wire.OperateReply{Node: l.HolderNode, NodeID: l.HolderNodeID, Token: l.Token}
	if m, ok := p.aliveMember(l.HolderNodeID); ok {
		actx, cancel := context.WithTimeout(ctx, p.o.RPCTimeout)
		ask := req
		ask.Token = l.Token
		got, err := p.askNode(actx, m, ask)
		cancel()
		if err == nil && got.Refused == "" {
			rep.Graceful = true
			rep.Message = fmt.Sprintf("released lease %q (token %d) held by %s: its node ended its belief, then released it", req.Target, l.Token, l.HolderNode)
			return rep, nil
		}
		p.o.Log.Info("the lease's holder did not release it; releasing it without its node", "lease", req.Target, "holder", l.HolderNode,
			"error", err, "refused", got.Refused)
	}
	cmd := fsm.Command{Op: fsm.OpRelease, Lease: &fsm.LeaseCmd{Name: req.Target, Session: l.Holder, Request: l.Request, Token: l.Token}}
	if _, err := p.o.Commit(ctx, cmd); err != nil {
		return rep, fmt.Errorf("committing the release of %q: %w", req.Target, err)
	}
	rep.Message = fmt.Sprintf("released lease %q (token %d) held by %s without its node, which did not answer: it may believe it "+
		"holds the lease until it applies the release or its session lapses; fenced resources refuse token %d once the next holder writes",
		req.Target, l.Token, l.HolderNode, l.Token)
	return rep, nil
}

// stepDown hands raft leadership to another voter and names it.
func (p *Operator) stepDown(ctx context.Context) (wire.OperateReply, error) {
	if len(p.o.Cluster.Voters()) < 2 {
		return wire.OperateReply{Refused: "no other voter to take over"}, nil
	}
	p.o.Raft.TransferLeadership(ctx)
	if p.o.Leading() {
		return wire.OperateReply{}, errors.New("the leadership transfer did not complete (the leader's log says why); this node still leads")
	}
	rep := wire.OperateReply{Message: p.o.NodeName + " stepped down"}
	wait, cancel := context.WithTimeout(ctx, p.o.RPCTimeout)
	defer cancel()
	for {
		if name, id, ok := p.o.RaftLeader(); ok && id != p.o.ID {
			rep.Node, rep.NodeID = name, id
			rep.Message += "; the raft leader is now " + cmp.Or(name, id)
			return rep, nil
		}
		if !pause.For(wait, 20*time.Millisecond) {
			return rep, nil // stepped down; the next leader is not known here yet
		}
	}
}

// removePeer takes server req.Target out of the raft configuration,
// promoting a replacement first when one is ready; it refuses when the
// voters left could not form a quorum, when the server is this leader, or
// (unless req.Force) when gossip shows it alive.
func (p *Operator) removePeer(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	var id string
	var all []string
	for _, s := range append(p.o.Cluster.Voters(), p.o.Cluster.NonVoters()...) {
		name := p.o.Cluster.NameOf(s)
		all = append(all, cmp.Or(name, s))
		if s == req.Target || (name != "" && name == req.Target) {
			id = s
		}
	}
	switch {
	case id == "":
		return wire.OperateReply{Refused: fmt.Sprintf("no server %q in the raft configuration (it has %s)", req.Target, strings.Join(all, ", "))}, nil
	case id == p.o.ID:
		return wire.OperateReply{Refused: fmt.Sprintf("%s is the raft leader: step it down first (holdfastctl raft step-down), "+
			"or decommission it with holdfastctl leave", req.Target)}, nil
	}
	name := cmp.Or(p.o.Cluster.NameOf(id), id)
	if _, alive := p.aliveMember(id); alive && !req.Force {
		return wire.OperateReply{Refused: fmt.Sprintf("%s is alive: decommission it with holdfastctl -addr ITS_ADMIN_ADDRESS -confirm %s leave, "+
			"which hands its shards off first; remove-peer is for a server that is gone (-force removes it anyway, and the leader "+
			"adds it back as a non-voter while it stays alive)", name, name)}, nil
	}
	lr, err := p.o.Cluster.Decommission(ctx, wire.LeaveRequest{ID: id, Force: true})
	if errors.Is(err, wire.ErrLeaveRefused) {
		return wire.OperateReply{Refused: strings.TrimPrefix(err.Error(), wire.ErrLeaveRefused.Error()+": ")}, nil
	}
	if err != nil {
		return wire.OperateReply{}, err
	}
	rep := wire.OperateReply{Node: name, NodeID: id, Promoted: cmp.Or(p.o.Cluster.NameOf(lr.Promoted), lr.Promoted),
		Message: fmt.Sprintf("removed %s from the raft configuration", name)}
	if rep.Promoted != "" {
		rep.Message += "; " + rep.Promoted + " was promoted to voter in its place"
	}
	return rep, nil
}
