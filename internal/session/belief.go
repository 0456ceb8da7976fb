package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// Belief is the time window of one grant (a leader lease, a shard lease, a
// semaphore permit) under a Session: a context that ends the moment this
// node stops believing it holds the grant. It ends with its session, when
// ended by this node (End), or at a cap (CapAt) that later keepalives do
// not move.
type Belief struct {
	start time.Duration // when this node began to believe, after its session's born (8 bytes, not a Time's 24)
	ctx   endCtx        // its session, and its mu guards the fields below too

	endRan bool        // End ran (it runs once)
	more   *beliefMore // made by End and CapAt: most beliefs never need it
}

// beliefMore is what a belief holds only once it ended by this node's own
// action or was capped.
type beliefMore struct {
	endTime time.Time          // when the belief ended by this node's own action
	until   time.Time          // the cap: the belief ends then, whatever the session
	untilC  time.Duration      // until on the session's clock
	onCap   func(at time.Time) // ends the belief at its cap (nil: no cap)
	timer   *bootTimer         // fires at untilC
}

// moreLocked returns b.more, making it if needed; b.ctx.mu is held.
func (b *Belief) moreLocked() *beliefMore {
	if b.more == nil {
		b.more = &beliefMore{}
	}
	return b.more
}

// NewBelief starts a belief under s, beginning now. Its context registers
// nothing with the session's until someone waits on it (see endCtx), so a
// belief nobody waits on costs only its own memory.
func NewBelief(s *Session) *Belief {
	b := &Belief{}
	b.Init(s)
	return b
}

// Init starts b, a zero Belief, under s, beginning now: NewBelief for a
// belief that is a field of a larger value (one allocation, not two).
func (b *Belief) Init(s *Session) {
	b.ctx.sess, b.start = s, time.Since(s.born)
}

// Session returns the session the belief is held under.
func (b *Belief) Session() *Session { return b.ctx.sess }

// Start returns when this node began to believe.
func (b *Belief) Start() time.Time { return b.ctx.sess.born.Add(b.start) }

// Context returns a context cancelled when the belief ends; context.Cause
// says why.
func (b *Belief) Context() context.Context { return &b.ctx }

// Cause is nil while the belief holds, then why it ended. Unlike Observe
// it does not read the clock.
func (b *Belief) Cause() error { return b.ctx.causeOf() }

// Observe reads the clock once, ends the belief if its session's deadline
// or its cap has passed (after a suspend, before the timers noticed), and
// returns how long the belief has left (0 once it ended).
func (b *Belief) Observe() time.Duration {
	if b.ctx.Err() != nil {
		return 0
	}
	now := b.ctx.sess.clock.Now()
	left, ok := b.ctx.sess.leftAt(now)
	if !ok {
		return 0
	}
	b.ctx.mu.Lock()
	var c beliefMore
	if b.more != nil {
		c = *b.more
	}
	b.ctx.mu.Unlock()
	if c.onCap != nil {
		if now >= c.untilC {
			c.onCap(c.until)
			return 0
		}
		left = min(left, c.untilC-now)
	}
	if b.ctx.Err() != nil {
		return 0
	}
	return left
}

// errReleasedHere is Check's error once this node released the grant
// itself.
var errReleasedHere = fmt.Errorf("%w by this node", wire.ErrReleased)

// Check observes the belief (Observe: one clock read) and returns how long
// it has left, with nil while it holds; once it ended, an error wrapping
// wire.ErrReleased after this node's own release ("released by this
// node") or the cause of a release at an operator's request, and
// otherwise wire.ErrLeaseLost wrapping the cause. The caller compares the
// time left with its margin.
func (b *Belief) Check() (time.Duration, error) {
	r := b.Observe()
	if err := b.Cause(); err == wire.ErrReleased {
		return r, errReleasedHere // this node's own Release: not a loss
	} else if errors.Is(err, wire.ErrReleased) {
		return r, err // released at an operator's request; the cause says so
	} else if err != nil {
		return r, wire.Wrap(wire.ErrLeaseLost, err)
	}
	return r, nil
}

// Cancel ends the belief with cause without recording an end time or
// running End's once: for a belief that was never handed out.
func (b *Belief) Cancel(cause error) { b.ctx.end(cause) }

// End ends the belief with cause, recording at (or now, if zero) as its
// end, and runs after once; it reports whether this call ended it (false
// if it had ended already, by End, its cap or its session).
func (b *Belief) End(cause error, at time.Time, after func()) bool {
	b.ctx.mu.Lock()
	if b.endRan {
		b.ctx.mu.Unlock()
		return false
	}
	b.endRan = true
	if at.IsZero() {
		at = time.Now()
	}
	ended := b.ctx.endLocked(cause)
	if ended {
		b.moreLocked().endTime = at
	}
	if b.more != nil && b.more.timer != nil {
		b.more.timer.Stop()
	}
	b.ctx.mu.Unlock()
	if after != nil {
		after()
	}
	return ended
}

// CapAt freezes the belief: it ends no later than the session's current
// belief deadline, however far later keepalives extend the session. onCap
// runs when that instant comes first (it should End the belief). Only the
// first call sets the cap.
func (b *Belief) CapAt(onCap func(at time.Time)) {
	until, untilC := b.ctx.sess.deadline()
	b.ctx.mu.Lock()
	defer b.ctx.mu.Unlock()
	m := b.moreLocked()
	if m.onCap != nil {
		return
	}
	m.until, m.untilC, m.onCap = until, untilC, onCap
	m.timer = afterBoot(b.ctx.sess.clock, untilC, b.ctx.sess.step, func() { onCap(until) })
}

// EndedAt returns when the belief ended by this node's own action (release,
// handoff, loss noticed, shutdown, a capped deadline), or the zero time if
// it has not ended or ended because its session's belief lapsed (then the
// session's deadline is the end).
func (b *Belief) EndedAt() time.Time {
	b.ctx.mu.Lock()
	defer b.ctx.mu.Unlock()
	if b.ctx.errLocked() != nil && b.more != nil {
		return b.more.endTime
	}
	return time.Time{}
}
