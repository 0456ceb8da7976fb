package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// newLeases builds the part that holds this node's leases and semaphore
// permits (package internal/leases) over the coordinator's replica,
// proposer and session. It starts the part's watch loop; closeAll joins it.
func newLeases(c *Coordinator) *leases.Manager {
	return leases.New(leases.Options{
		View:     c.fsm.View,
		Sessions: c.sessions,
		Stop:     c.ctx.Done(),
		AskLeader: func(ctx context.Context, r wire.WaitGrantRequest) (rep wire.WaitGrantReply, err error) {
			addr, self := c.node.LeaderRPCAddr()
			if self || addr == "" {
				return rep, wire.ErrNoLeader // this node leads: its replica answers first
			}
			return rep, wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodWaitGrant, r, &rep))
		},
		Proposer:       c.node,
		AttemptTimeout: c.cfg.RPCTimeout,
		LeaderChanged:  c.noLeader.Changed,
		Log:            c.log,
		Metrics:        c.metrics.leases,
	})
}

// grantBelief is the belief of a lease's or permit's grant.
func (c *Coordinator) grantBelief(g *leases.Grant) belief {
	return belief{token: g.Token(), life: g.Belief(), margin: c.cfg.Session.LeaseMargin}
}

// commitRetry commits an idempotent command of the facade's own (an
// operator's, the shard manager's), retrying while its outcome is unknown
// (see leases.Retry).
func (c *Coordinator) commitRetry(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error) {
	return leases.Retry(ctx, cmd, c.node.Commit, c.log)
}
