package coordinator

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// newLessor wires the leader's side of sessions (internal/session.Lessor)
// to this node's raft, replica and transport. Its Run is the leader duty's
// (leaderLoop), its ConfirmLoop one of the node's loops.
// keepAliveConfirmSpacing spaces the confirmation rounds keepalives start
// on the leader: at most 100 a second, whatever the node count (a
// keepalive waits at most this long for its round; Sync never waits).
const keepAliveConfirmSpacing = 10 * time.Millisecond

func (c *Coordinator) newLessor() *session.Lessor {
	return session.NewLessor(session.LessorOptions{
		Log:  c.log,
		View: c.fsm.View,
		Expire: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.node.ApplyLocal(ctx, mustEncode(cmd))
			return err
		},
		Term:           c.raft.CurrentTerm,
		Leading:        func() bool { return c.raft.State() == raft.Leader },
		Voters:         func() []session.Voter { return session.VotersOf(c.node.Servers()) },
		Self:           c.id,
		Confirm:        session.AskConfirm(c.trans),
		ConfirmTimeout: min(c.cfg.RPCTimeout, c.cfg.Session.TTL/3),
		ConfirmSpacing: keepAliveConfirmSpacing,
		ExpiryGrace:    c.cfg.Session.ExpiryGrace,
		NotLeader:      session.NotLeaderHere(c.node.LeaderRPCAddr),
		Metrics:        c.metrics.session,
		StallThreshold: c.cfg.Session.TTL / 10,
		Loads:          c.loads.book.Record,
	})
}
