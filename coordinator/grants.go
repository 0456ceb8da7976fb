package coordinator

import (
	"context"

	"time"

	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// newLeases builds the part that holds this node's leases and semaphore
// permits (package internal/leases) over the coordinator's replica,
// proposer and session. It starts the part's watch loop; closeAll joins it.
func newLeases(c *Coordinator) *leases.Part {
	return leases.New(leases.Options{
		View:        c.fsm.View,
		WaitSession: c.waitSession,
		Believe: func(s *session.Session, kind leases.Kind, token, _ uint64) leases.Belief {
			b := newBelief(c, kind.String(), s, token)
			return grantBelief{&b}
		},
		AskLeader: func(ctx context.Context, r wire.WaitGrantRequest) (rep wire.WaitGrantReply, err error) {
			addr, self := c.node.LeaderRPCAddr()
			if self || addr == "" {
				return rep, wire.ErrNoLeader // this node leads: its replica answers first
			}
			return rep, wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodWaitGrant, r, &rep))
		},
		Propose:        c.node.Commit,
		Submit:         c.node.Accept,
		ProposeRetry:   c.applyRetry,
		Errors:         leaseErrors(),
		AttemptTimeout: c.cfg.RPCTimeout,
		LeaderChanged:  c.noLeader.Changed,
		Log:            c.log,
		Metrics:        c.metrics.leases,
	})
}

// leaseErrors are the error values package leases returns and recognises.
func leaseErrors() leases.Errors {
	return leases.Errors{Shutdown: ErrShutdown, Rejected: wire.ErrRejected, NoSession: wire.ErrNoSession,
		Held: ErrLeaseHeld, Resigned: ErrReleased, Lost: ErrLeaseLost}
}

// grantBelief is a lease's or permit's belief as package leases sees it.
type grantBelief struct{ *belief }

func (b grantBelief) End(cause error) bool { return b.end(cause, time.Time{}, nil) }

// beliefOf returns the belief of a grant made by this coordinator.
func beliefOf(g *leases.Grant) *belief { return g.Belief().(grantBelief).belief }
