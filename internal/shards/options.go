package shards

import (
	"context"
	"log/slog"
	"time"

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
	// Heard reports whether this leader has answered a keepalive of the
	// session since it took office (session.Lessor.Answered): only such a
	// session is given shards; one not heard from yet keeps what it owns
	// (nil: every session is heard). A create proves nothing (its caller
	// may have given up on it), and a session a previous leader knew may
	// have no live node behind it; every live session's keepalive comes
	// within TTL/3 of a new leader's arrival.
	Heard func(session string) bool
	// HeardChanged returns a channel closed when the next session is
	// heard from for the first time (session.Lessor.AnsweredChanged): the
	// balancer then plans again (nil: it notices at its next round).
	HeardChanged func() <-chan struct{}
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
	// Loads returns each shard's reported load as the planner takes it
	// (shardown.Params.Load; -1 where none), in dst (nil: no reports, the
	// planner balances by count).
	Loads func(v *fsm.View, dst []float64) []float64
	// LoadRatio and LoadMoves are the planner's load band and base move
	// budget (shardown.Params).
	LoadRatio float64
	LoadMoves int
	// Report receives the report of every round that planned (nil: none):
	// what each member carries and should carry, and the moves started.
	Report func(*PlanReport)
	// Previews delivers requests for the plan of the next round, answered
	// between rounds (Balancer.Preview; nil: none).
	Previews <-chan PreviewRequest

	// Prepare asks session to, the target of planned moves, to prepare
	// items (the shards, their owners and tokens) and returns once it
	// reported them ready or wait passed (nil either way), or with an
	// error when it could not be asked: those moves then wait
	// PrepareTimeout and are asked again. Nil: moves are not prepared.
	Prepare func(ctx context.Context, to string, items []fsm.ShardItem, wait time.Duration) error
	// Abandon tells session to, best effort, that the plan no longer
	// wants the moves of items (nil: it is not told).
	Abandon func(ctx context.Context, to string, items []fsm.ShardItem)
	// PrepareTimeout bounds the wait for a target's prepare.
	PrepareTimeout time.Duration
}

func (o BalancerOptions) withDefaults() BalancerOptions {
	if o.Expiring == nil {
		o.Expiring = func(string, time.Time) bool { return false }
	}
	if o.Heard == nil {
		o.Heard = func(string) bool { return true }
	}
	if o.HeardChanged == nil {
		o.HeardChanged = func() <-chan struct{} { return nil }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
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
