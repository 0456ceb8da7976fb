package coordinator

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// newLessor wires the leader's side of sessions (internal/session.Lessor)
// to this node's raft, replica and transport. Its Run is the leader duty's
// (leaderLoop), its ConfirmLoop one of the node's loops.
func (c *Coordinator) newLessor() *session.Lessor {
	return session.NewLessor(session.LessorOptions{
		Log:  c.log,
		View: c.fsm.View,
		Expire: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.applyLocal(ctx, mustEncode(cmd))
			return err
		},
		Term:           c.raft.CurrentTerm,
		Leading:        func() bool { return c.raft.State() == raft.Leader },
		Voters:         c.voterAddrs,
		Self:           c.id,
		Confirm:        c.askConfirm,
		ConfirmTimeout: min(c.cfg.RPCTimeout, c.cfg.Session.TTL/3),
		ExpiryGrace:    c.cfg.Session.ExpiryGrace,
		NotLeader:      c.notLeaderHere,
		Expired:        func() { c.metrics.expiries.Inc() },
		StallThreshold: c.cfg.Session.TTL / 10,
	})
}

// voterAddrs lists the raft configuration's voters with their RPC
// addresses ("" where the raft address does not parse).
func (c *Coordinator) voterAddrs() []session.Voter {
	var voters []session.Voter
	for _, s := range c.raftServers() {
		if s.Suffrage != raft.Voter {
			continue
		}
		addr, _, err := transport.SplitRaftAddress(s.Address)
		if err != nil {
			addr = ""
		}
		voters = append(voters, session.Voter{ID: string(s.ID), Addr: addr})
	}
	return voters
}

// notLeaderHere is the error for a leader-only request this node cannot
// serve: it names the leader when another node is known to lead.
func (c *Coordinator) notLeaderHere() error {
	addr, self := c.leaderRPCAddr()
	if self {
		addr = ""
	}
	return &notLeaderError{Leader: addr}
}

type (
	confirmRequest = wire.ConfirmRequest
	confirmReply   = wire.ConfirmReply
)

// askConfirm asks the voter at addr whether it is still in term (one
// voter's part of the lessor's confirmation round).
func (c *Coordinator) askConfirm(ctx context.Context, addr string, term uint64) (bool, error) {
	var rep confirmReply
	err := c.trans.Call(ctx, addr, methodConfirm, confirmRequest{Term: term}, &rep)
	return rep.OK, err
}

// serveConfirm answers a leader's confirmation request: yes while this
// node's current raft term is the leader's.
func (c *Coordinator) serveConfirm(req confirmRequest) confirmReply {
	return confirmReply{OK: c.raft.CurrentTerm() == req.Term}
}
