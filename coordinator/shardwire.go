package coordinator

import (
	"context"
	"errors"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// balancerOptions wires a leader term's balancer to this node.
func (c *Coordinator) balancerOptions() shards.BalancerOptions {
	o := shards.BalancerOptions{
		View: c.fsm.View,
		Apply: func(ctx context.Context, cmd fsm.Command) (shards.Applied, error) {
			res, err := c.node.ApplyLocal(ctx, mustEncode(cmd))
			return shards.Applied{Index: res.Index, Count: res.Count}, err
		},
		Expiring:          c.lessor.ExpiringOrDue,
		Heard:             c.lessor.Answered,
		HeardChanged:      c.lessor.AnsweredChanged,
		Log:               c.log,
		Metrics:           c.metrics.shards,
		SessionTTL:        c.cfg.Session.TTL,
		ExpiryGrace:       c.cfg.Session.ExpiryGrace,
		JoinStabilization: c.cfg.Shards.JoinStabilization,
		RebalanceDelay:    c.cfg.Shards.RebalanceDelay,
		ReconcileInterval: c.cfg.Cluster.ReconcileInterval,
		MaxMoves:          c.cfg.Shards.MaxMoves,
		Epsilon:           c.cfg.Shards.Epsilon,
		Loads:             c.balancerLoads,
		Report:            c.loads.plan.Store,
		Previews:          c.loads.previews,
		LoadRatio:         c.cfg.Shards.LoadRatio,
		LoadMoves:         c.cfg.Shards.LoadMoves,
	}
	c.prepareOptions(&o)
	return o
}

// newShardManager wires the owner side of shard ownership to this node.
func (c *Coordinator) newShardManager() *shards.Manager[*ShardLease] {
	addr := c.serviceAddr()
	// Without a handler there is nothing to call: no goroutine per grant.
	var acquire func(context.Context, *ShardLease)
	var release func(context.Context, *ShardLease) error
	if h := c.cfg.Shards.Handler; h != nil {
		acquire, release = h.Acquire, h.Release
	}
	return shards.NewManager(shards.Options[*ShardLease]{
		View:    c.fsm.View,
		Session: c.currentSession,
		Commit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.applyRetry(ctx, cmd)
			return err
		},
		IsNoSession:    func(err error) bool { return errors.Is(err, wire.ErrNoSession) },
		Stop:           c.ctx.Done(),
		Wrap:           c.wrapShardLease,
		Acquire:        acquire,
		Release:        release,
		Ended:          c.shardLeaseEnded,
		DrainTimeout:   c.cfg.Shards.DrainTimeout,
		Prepare:        c.managerPrepare(),
		PrepareTimeout: c.prepareTimeout(),
		NodeID:         c.id,
		Addr:           addr,
		Weight:         max(c.cfg.Shards.Weight, c.cfg.Shards.Capacity), // one of them is 0 or both are equal
		SessionTTL:     c.cfg.Session.TTL,
		Errors:         shards.Errors{Lost: ErrLeaseLost, Revoked: ErrRevoked, Shutdown: ErrShutdown, Abandoned: ErrMoveAbandoned},
		Log:            c.log,
		Metrics:        c.metrics.shards,
	})
}

// serviceAddr is the address this node's holders show: Config.ServiceAddr,
// or the RPC address when that is empty.
func (c *Coordinator) serviceAddr() string {
	if c.cfg.ServiceAddr != "" {
		return c.cfg.ServiceAddr
	}
	return c.trans.Addr()
}
