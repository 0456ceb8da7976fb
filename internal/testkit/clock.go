package testkit

import (
	"sync/atomic"
	"time"
)

// Clock is a clock a test moves: a manual one (NewClock, or the zero
// value, which starts at 0 with the zero time as its origin) stands still
// until Set or Advance moves it; a jumping one (NewJumpClock) runs with its
// base and Advance jumps it forward, as a suspend does. Now satisfies
// session.Clock (and so coordinator.Clock); Time gives the wall-clock
// reading for code that takes a func() time.Time. It is safe for
// concurrent use.
type Clock struct {
	origin time.Time
	base   interface{ Now() time.Duration } // nil: a manual clock
	offset atomic.Int64
}

// NewClock returns a manual clock reading 0, whose Time is origin.
func NewClock(origin time.Time) *Clock { return &Clock{origin: origin} }

// NewJumpClock returns base's reading plus an offset that Advance moves
// forward; its Time is the wall clock plus the offset.
func NewJumpClock(base interface{ Now() time.Duration }) *Clock {
	return &Clock{base: base}
}

// Now returns the time elapsed since the clock's origin.
func (c *Clock) Now() time.Duration {
	d := time.Duration(c.offset.Load())
	if c.base != nil {
		d += c.base.Now()
	}
	return d
}

// Time returns the wall-clock reading: origin plus Now for a manual clock,
// the system's wall clock plus the offset for a jumping one.
func (c *Clock) Time() time.Time {
	if c.base != nil {
		return time.Now().Add(time.Duration(c.offset.Load()))
	}
	return c.origin.Add(c.Now())
}

// Set sets the offset: for a manual clock, what Now reads.
func (c *Clock) Set(d time.Duration) { c.offset.Store(int64(d)) }

// Advance moves the clock forward by d (a jump, for a jumping clock).
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
