package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// shardMetrics are the shard collectors internal/shards updates.
func (c *Coordinator) shardMetrics() *shards.Metrics {
	m := c.metrics
	return &shards.Metrics{Handoffs: m.handoffs, Forced: m.forced, HandoffDuration: m.handoffDuration,
		UnownedSeconds: m.unownedSeconds, AcquireWait: m.acquireWait.WithLabelValues(kindShard)}
}

// balancerOptions wires a leader term's balancer to this node.
func (c *Coordinator) balancerOptions() shards.BalancerOptions {
	return shards.BalancerOptions{
		View: c.fsm.View,
		Apply: func(ctx context.Context, cmd fsm.Command) (shards.Applied, error) {
			res, err := c.applyLocal(ctx, mustEncode(cmd))
			return shards.Applied{Index: res.Index, Count: res.Count}, err
		},
		Expiring:          c.lessor.expiringOrDue,
		Log:               c.log,
		Metrics:           c.shardMetrics(),
		SessionTTL:        c.cfg.SessionTTL,
		ExpiryGrace:       c.cfg.ExpiryGrace,
		JoinStabilization: c.cfg.ShardJoinStabilization,
		RebalanceDelay:    c.cfg.ShardRebalanceDelay,
		ReconcileInterval: c.cfg.ReconcileInterval,
		MaxMoves:          c.cfg.ShardMaxMoves,
		Epsilon:           c.cfg.ShardEpsilon,
	}
}
