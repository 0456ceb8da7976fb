package shards

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// ShardID names a shard: an integer in [0, the cluster's shard count).
type ShardID = shardown.ShardID

// Applied is what the commit of a shard command reports.
type Applied struct {
	// Index is the raft index the command was applied at.
	Index uint64
	// Count is how many of its items took effect.
	Count int
}

// Metrics are the shard collectors the parts update; the caller creates and
// registers them (their names are part of the documented metrics). A nil
// field is replaced by an unregistered collector.
type Metrics struct {
	// Handoffs counts revokes committed as leader
	// (holdfast_shard_handoffs_total).
	Handoffs prometheus.Counter
	// Forced counts revoked shards forced free as leader
	// (holdfast_shard_forced_releases_total).
	Forced prometheus.Counter
	// HandoffDuration observes revoke-to-grant times as leader
	// (holdfast_shard_handoff_duration_seconds).
	HandoffDuration prometheus.Observer
	// UnownedSeconds sums shard-seconds without an owner as leader
	// (holdfast_shards_unowned_seconds_total).
	UnownedSeconds prometheus.Counter
	// AcquireWait observes how long a shard was seen free before this
	// node's grant (holdfast_lease_acquire_wait_seconds{kind="shard"}).
	AcquireWait prometheus.Observer
}

func (m *Metrics) withDefaults() *Metrics {
	out := Metrics{}
	if m != nil {
		out = *m
	}
	c := func(p *prometheus.Counter, name string) {
		if *p == nil {
			*p = prometheus.NewCounter(prometheus.CounterOpts{Name: name})
		}
	}
	o := func(p *prometheus.Observer, name string) {
		if *p == nil {
			*p = prometheus.NewHistogram(prometheus.HistogramOpts{Name: name})
		}
	}
	c(&out.Handoffs, "handoffs")
	c(&out.Forced, "forced")
	c(&out.UnownedSeconds, "unowned_seconds")
	o(&out.HandoffDuration, "handoff_duration")
	o(&out.AcquireWait, "acquire_wait")
	return &out
}

// BalancerOptions is what the leader's balancer needs from its neighbours.
type BalancerOptions struct {
	// View returns the replica's current view (required).
	View func() *fsm.View
	// Apply commits a shard command through raft on this node, the leader
	// (required). It fails at once when this node no longer leads.
	Apply func(ctx context.Context, cmd fsm.Command) (Applied, error)
	// Expiring reports whether the leader decided to expire a session or
	// its deadline has passed at now: such a session gets no shard (nil:
	// none is).
	Expiring func(session string, now time.Time) bool
	// Now is the balancer's clock (nil: time.Now).
	Now func() time.Time
	// Log receives the balancer's logs (nil: discarded).
	Log *slog.Logger
	// Metrics are updated on handoffs and forced releases.
	Metrics *Metrics

	// SessionTTL is the revoke deadline of an owner whose session the
	// replica does not show.
	SessionTTL time.Duration
	// ExpiryGrace is added to the deadline of revokes inherited from an
	// earlier leader.
	ExpiryGrace time.Duration
	// JoinStabilization is how long a new session waits before it gets
	// shards.
	JoinStabilization time.Duration
	// RebalanceDelay coalesces the rounds after a change of the replica.
	RebalanceDelay time.Duration
	// ReconcileInterval is the longest time between two rounds.
	ReconcileInterval time.Duration
	// MaxMoves bounds the rebalancing handoffs in flight (0: max(1,
	// shards/16)).
	MaxMoves int
	// Epsilon is the planner's balance slack (see shardown.Params).
	Epsilon float64
}

func (o BalancerOptions) withDefaults() BalancerOptions {
	if o.Expiring == nil {
		o.Expiring = func(string, time.Time) bool { return false }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	o.Metrics = o.Metrics.withDefaults()
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = time.Second
	}
	return o
}

// FreeShards counts the shards v shows without an owner.
func FreeShards(v *fsm.View) int {
	n := 0
	v.EachShard(func(s fsm.Shard) bool {
		if s.State == fsm.ShardFree {
			n++
		}
		return true
	})
	return n
}

// sleepCtx waits d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
