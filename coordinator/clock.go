package coordinator

import (
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
)

// Clock measures how long this node may still believe in its leases. Now
// returns the time elapsed since an arbitrary fixed origin; it never goes
// back, and it must keep counting while the machine is suspended: a holder
// that resumes from suspend must see that the time its session had left is
// gone, as the raft leader does. Config.Clock replaces the default (tests
// use it to jump time).
type Clock = session.Clock

// SystemClock returns the clock holdfast uses when Config.Clock is nil: on
// Linux CLOCK_BOOTTIME, on macOS CLOCK_MONOTONIC (both count suspended
// time); elsewhere Go's monotonic clock, which may not count it.
func SystemClock() Clock { return session.SystemClock() }

// clockStep is how often a belief deadline re-reads the clock.
func (c *Coordinator) clockStep() time.Duration {
	return min(c.cfg.Session.LeaseMargin/2, 250*time.Millisecond)
}
