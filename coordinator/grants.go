package coordinator

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// newLeases builds the part that holds this node's leases and semaphore
// permits (package internal/leases) over the coordinator's replica,
// proposer and session. It starts the part's watch loop; closeAll joins it.
func newLeases(c *Coordinator) *leases.Part {
	propose := func(f func(context.Context, fsm.Command) (applyResult, error)) func(context.Context, fsm.Command) (leases.Result, error) {
		return func(ctx context.Context, cmd fsm.Command) (leases.Result, error) {
			r, err := f(ctx, cmd)
			return leases.Result{Index: r.Index, Token: r.Token, Holder: r.Holder, Request: r.Request, Queued: r.Queued, Stale: r.Stale}, err
		}
	}
	return leases.New(leases.Options{
		View:        c.fsm.View,
		NextRequest: c.nextRequest,
		Believe: func(s *session.Session, kind leases.Kind, token, index uint64) leases.Belief {
			b := newBelief(c, kind.String(), s, token, index)
			return grantBelief{&b}
		},
		AskLeader: func(ctx context.Context, r wire.WaitGrantRequest) (rep wire.WaitGrantReply, err error) {
			addr, self := c.leaderRPCAddr()
			if self || addr == "" {
				return rep, wire.ErrNoLeader // this node leads: its replica answers first
			}
			return rep, wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodWaitGrant, r, &rep))
		},
		Propose:      propose(c.apply),
		ProposeRetry: propose(c.applyRetry),
		Errors: leases.Errors{Shutdown: ErrShutdown, Rejected: errRejected, NoSession: errNoSession,
			Held: ErrLeaseHeld, Resigned: ErrReleased, Lost: ErrLeaseLost},
		AttemptTimeout: c.cfg.RPCTimeout,
		Log:            c.log,
		Metrics:        leases.Metrics{AcquireWait: c.metrics.acquireWait, Settlements: c.metrics.settlements},
	})
}

// grantBelief is a lease's or permit's belief as package leases sees it.
type grantBelief struct{ *belief }

func (b grantBelief) End(cause error) bool { return b.end(cause, time.Time{}, nil) }

// beliefOf returns the belief of a grant made by this coordinator.
func beliefOf(g *leases.Grant) *belief { return g.Belief().(grantBelief).belief }
