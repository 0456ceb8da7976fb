package session

import (
	"context"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// Session is this node's current session incarnation as the node believes
// it: valid until a deadline measured on a Clock (which counts suspended
// time). A timer cancels its context at that instant even if no message
// ever arrives (lease rule 4 in docs/ARCHITECTURE.md), and every read of
// the belief (Remaining, Extend, a Belief's Observe) looks at the clock
// too, so a node resumed from suspend sees the belief gone at once; every
// lease context derives from the session's.
type Session struct {
	id      string
	ttl     time.Duration
	created uint64
	sent    time.Time // when the create command was sent: the belief's base
	ctx     context.Context
	cancel  context.CancelCauseFunc
	clock   Clock
	step    time.Duration // how often the timer re-reads the clock
	born    time.Time     // New's time: the origin of its beliefs' start offsets

	mu          sync.Mutex
	validUntil  time.Time     // the deadline on Go's clock (for reports and waits)
	validUntilC time.Duration // the deadline on clock: the one that counts
	timer       *bootTimer
}

// New returns a session with the given ID and TTL whose context derives
// from parent. It has no deadline until the first Extend; its deadline
// timer re-reads clock at least every step.
func New(parent context.Context, id string, ttl time.Duration, clock Clock, step time.Duration) *Session {
	s := &Session{id: id, ttl: ttl, clock: clock, step: step, born: time.Now()}
	s.ctx, s.cancel = context.WithCancelCause(parent)
	return s
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// Context returns a context cancelled when this node stops believing in
// the session; context.Cause says why (ErrExpired, or the parent's cause).
func (s *Session) Context() context.Context { return s.ctx }

// opened records that the session's create, sent at sent, committed at
// raft index created. Call it before the session is shared.
func (s *Session) opened(created uint64, sent time.Time) {
	s.created, s.sent = created, sent
}

// ValidUntil returns the belief's deadline on Go's clock (zero before the
// first Extend).
func (s *Session) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// deadline returns the belief's deadline on Go's clock and on the
// session's clock.
func (s *Session) deadline() (time.Time, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil, s.validUntilC
}

// Extend moves the belief forward to until (never back), untilC being the
// same instant on the session's clock, and re-arms the timer; it reports
// false when the belief had already lapsed.
func (s *Session) Extend(until time.Time, untilC time.Duration) bool {
	if !s.check() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	if untilC <= s.validUntilC {
		return true
	}
	s.validUntil, s.validUntilC = until, untilC
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = afterBoot(s.clock, untilC, s.step, func() { s.cancel(ErrExpired) })
	return true
}

// check ends the belief if the clock has passed its deadline (a resume
// from suspend, before the timer noticed); it reports whether the belief
// still holds.
func (s *Session) check() bool {
	_, ok := s.leftAt(s.clock.Now())
	return ok
}

// Remaining is how long the belief has left (0 once it lapsed).
func (s *Session) Remaining() time.Duration {
	left, _ := s.leftAt(s.clock.Now())
	return left
}

// leftAt is how long the belief has left at now on the session's clock; it
// ends the belief (false) once now is past its deadline.
func (s *Session) leftAt(now time.Duration) (time.Duration, bool) {
	if s.ctx.Err() != nil {
		return 0, false
	}
	s.mu.Lock()
	until := s.validUntilC
	s.mu.Unlock()
	if until == 0 {
		return 0, true // not extended yet
	}
	if now >= until {
		s.End(ErrExpired)
		return 0, false
	}
	return until - now, true
}

// End cancels the belief now with cause and stops the timer.
func (s *Session) End(cause error) {
	s.cancel(cause)
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
}

// Generation returns the highest generation among the sessions of node
// nodeID in v (0: none): a ClientOptions.Generation over a replica.
func Generation(v *fsm.View, nodeID string) uint64 {
	var gen uint64
	for _, s := range v.Sessions() {
		if s.NodeID == nodeID {
			gen = max(gen, s.Gen)
		}
	}
	return gen
}
