package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// newLessor wires the leader's side of sessions (internal/session.Lessor)
// to this node's raft, replica and transport. Its Run is the leader duty's
// (leaderLoop), its ConfirmLoop one of the node's loops.
func (c *Coordinator) newLessor() *session.Lessor {
	return session.NewLessor(session.LessorOptions{
		Log:  c.log,
		View: c.fsm.View,
		Expire: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.node.CommitAsLeader(ctx, mustEncode(cmd))
			return err
		},
		Term:           c.node.Term,
		Leading:        c.node.Leading,
		Voters:         func() []session.Voter { return session.VotersOf(c.node.Servers()) },
		Self:           c.id,
		Confirm:        session.AskConfirm(c.trans),
		ConfirmTimeout: min(c.cfg.RPCTimeout, c.cfg.Session.TTL/3),
		ExpiryGrace:    c.cfg.Session.ExpiryGrace,
		NotLeader:      session.NotLeaderHere(c.node.LeaderRPCAddr),
		Metrics:        c.metrics.session,
		StallThreshold: c.cfg.Session.TTL / 10,
	})
}
