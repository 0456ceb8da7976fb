package session

import (
	"context"
	"sync"
	"time"
)

// Belief is the time window of one grant (a leader lease, a shard lease, a
// semaphore permit) under a Session: a context that ends the moment this
// node stops believing it holds the grant. It ends with its session, when
// ended by this node (End), or at a cap (CapAt) that later keepalives do
// not move.
type Belief struct {
	sess   *Session
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

// NewBelief starts a belief under s, beginning now.
func NewBelief(s *Session) *Belief {
	ctx, cancel := context.WithCancelCause(s.ctx)
	return &Belief{sess: s, ctx: ctx, cancel: cancel, start: time.Now()}
}

// Session returns the session the belief is held under.
func (b *Belief) Session() *Session { return b.sess }

// Start returns when this node began to believe.
func (b *Belief) Start() time.Time { return b.start }

// Context returns a context cancelled when the belief ends; context.Cause
// says why.
func (b *Belief) Context() context.Context { return b.ctx }

// Cause is nil while the belief holds, then why it ended. Unlike Observe
// it does not read the clock.
func (b *Belief) Cause() error {
	if b.ctx.Err() == nil {
		return nil
	}
	return context.Cause(b.ctx)
}

// Observe reads the clock once, ends the belief if its session's deadline
// or its cap has passed (after a suspend, before the timers noticed), and
// returns how long the belief has left (0 once it ended).
func (b *Belief) Observe() time.Duration {
	if b.ctx.Err() != nil {
		return 0
	}
	now := b.sess.clock.Now()
	left, ok := b.sess.LeftAt(now)
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

// Cancel ends the belief with cause without recording an end time or
// running End's once: for a belief that was never handed out.
func (b *Belief) Cancel(cause error) { b.cancel(cause) }

// End cancels the belief with cause, recording at (or now, if zero) as its
// end, and runs after once; it reports whether this call ended it.
func (b *Belief) End(cause error, at time.Time, after func()) bool {
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

// CapAt freezes the belief: it ends no later than the session's current
// belief deadline, however far later keepalives extend the session. onCap
// runs when that instant comes first (it should End the belief). Only the
// first call sets the cap.
func (b *Belief) CapAt(onCap func(at time.Time)) {
	until, untilC := b.sess.deadline()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onCap != nil {
		return
	}
	b.capUntil, b.capUntilC, b.onCap = until, untilC, onCap
	b.capTimer = afterBoot(b.sess.clock, untilC, b.sess.step, func() { onCap(until) })
}

// EndedAt returns when the belief ended by this node's own action (resign,
// handoff, loss noticed, shutdown, a capped deadline), or the zero time if
// it has not ended or ended because its session's belief lapsed (then the
// session's deadline is the end).
func (b *Belief) EndedAt() time.Time {
	select {
	case <-b.ctx.Done():
	default:
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.endTime
}
