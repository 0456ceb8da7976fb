package coordinator

import (
	"context"
	"sync"
	"time"
)

// belief is what leader leases and shard leases share: a token and a
// context that ends the moment this node stops believing it holds the
// grant. Its methods are promoted to Lease and ShardLease.
type belief struct {
	c      *Coordinator
	token  uint64
	index  uint64 // raft index at which the grant was seen
	sess   *session
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
	start  time.Time // when this node began to believe

	mu        sync.Mutex
	endTime   time.Time          // when the belief ended by this node's own action
	capUntil  time.Time          // non-zero: the belief ends then, whatever the session
	capUntilC time.Duration      // capUntil on the session's clock
	onCap     func(at time.Time) // ends the belief at its cap
	capTimer  *bootTimer         // fires at capUntilC
}

// newBelief starts a belief of the given kind (kindLeader or kindShard)
// under session s; its end is counted in the metrics.
func newBelief(c *Coordinator, kind string, s *session, token, index uint64) belief {
	ctx, cancel := context.WithCancelCause(s.ctx)
	start := time.Now()
	context.AfterFunc(ctx, func() { c.metrics.leaseEnded(kind, start, context.Cause(ctx)) })
	return belief{c: c, token: token, index: index, sess: s, ctx: ctx, cancel: cancel, start: start}
}

// Token returns the fencing token of this grant: larger than every token
// granted before it for this lease name or shard, across leader changes and
// restarts.
func (b *belief) Token() uint64 { return b.token }

// Done returns a channel closed when the lease ends.
func (b *belief) Done() <-chan struct{} { return b.ctx.Done() }

// Context returns a context cancelled when the lease ends; context.Cause
// says why (ErrResigned, ErrRevoked, ErrSessionExpired, ErrLeaseLost,
// ErrShutdown).
func (b *belief) Context() context.Context { return b.ctx }

// Err returns nil while the lease is held, then why it ended. It reads
// the clock, so a holder resumed from suspend sees the lease ended at once.
func (b *belief) Err() error {
	b.observe()
	return b.cause()
}

// cause is nil while the belief holds, then why it ended.
func (b *belief) cause() error {
	if b.ctx.Err() == nil {
		return nil
	}
	return context.Cause(b.ctx)
}

// Remaining returns how long this node may still believe it holds the
// lease if no further keepalive is answered (0 once it ended).
func (b *belief) Remaining() time.Duration { return b.observe() }

// observe reads the clock once, ends the belief if its session's deadline
// or its cap has passed (after a suspend, before the timers noticed), and
// returns how long the belief has left (0 once it ended).
func (b *belief) observe() time.Duration {
	if b.ctx.Err() != nil {
		return 0
	}
	now := b.sess.clock.Now()
	left, ok := b.sess.leftAt(now)
	if !ok {
		return 0
	}
	b.mu.Lock()
	onCap, at, capC := b.onCap, b.capUntil, b.capUntilC
	b.mu.Unlock()
	if onCap != nil {
		if now >= capC {
			onCap(at)
			return 0
		}
		left = min(left, capC-now)
	}
	if b.ctx.Err() != nil {
		return 0
	}
	return left
}

// Checkpoint returns nil if the lease is held with at least the margin
// left. Call it before every side effect; it fails with an error wrapping
// ErrLeaseLost once the lease ended, or an *ExpiringError (ErrLeaseExpiring)
// that says how much time is left when less than the margin is.
func (b *belief) Checkpoint() error {
	r := b.observe()
	if err := b.cause(); err != nil {
		return wrap(ErrLeaseLost, err)
	}
	if r < b.c.cfg.LeaseMargin {
		return &ExpiringError{Remaining: r, Margin: b.c.cfg.LeaseMargin}
	}
	return nil
}

// end cancels the belief with cause, recording at (or now, if zero) as its
// end, and runs after once; it reports whether this call ended it.
func (b *belief) end(cause error, at time.Time, after func()) bool {
	ended := false
	b.once.Do(func() {
		ended = b.ctx.Err() == nil
		if at.IsZero() {
			at = time.Now()
		}
		b.mu.Lock()
		if ended {
			b.endTime = at
		}
		if b.capTimer != nil {
			b.capTimer.Stop()
		}
		b.mu.Unlock()
		b.cancel(cause)
		if after != nil {
			after()
		}
	})
	return ended
}

// capAt freezes the belief: it ends no later than the session's current
// belief deadline, however far later keepalives extend the session. onCap
// runs when that instant comes first.
func (b *belief) capAt(onCap func(at time.Time)) {
	b.sess.mu.Lock()
	until, untilC := b.sess.validUntil, b.sess.validUntilC
	b.sess.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onCap != nil {
		return
	}
	b.capUntil, b.capUntilC, b.onCap = until, untilC, onCap
	b.capTimer = afterBoot(b.sess.clock, untilC, b.sess.step, func() { onCap(until) })
}

// endedAt returns when the belief ended by this node's own action (resign,
// handoff, loss noticed, shutdown, a capped deadline), or the zero time if
// it ended because its session's belief lapsed (then the session's
// deadline is the end).
func (b *belief) endedAt() time.Time {
	select {
	case <-b.ctx.Done():
	default:
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.endTime
}
