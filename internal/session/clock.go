package session

import (
	"sync"
	"time"
)

// Clock measures how long this node may still believe in its leases. Now
// returns the time elapsed since an arbitrary fixed origin; it never goes
// back, and it must keep counting while the machine is suspended: a holder
// that resumes from suspend must see that the time its session had left is
// gone, as the raft leader does. Tests replace it to jump time.
type Clock interface {
	Now() time.Duration
}

// SystemClock returns the clock holdfast uses by default: on
// Linux CLOCK_BOOTTIME, on macOS CLOCK_MONOTONIC (both count suspended
// time); elsewhere Go's monotonic clock, which may not count it.
func SystemClock() Clock { return newSystemClock() }

// monoClock is Go's monotonic clock since origin: the fallback where no
// suspend-counting clock is known.
type monoClock struct{ origin time.Time }

func (m monoClock) Now() time.Duration { return time.Since(m.origin) }

// bootTimer runs f once a Clock reaches a deadline. Go's timers do not
// count suspended time, so it wakes at least every step to read the clock
// again: after a resume, f runs within a step.
type bootTimer struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// afterBoot starts a bootTimer running f (on its own goroutine) once clk
// reaches until.
func afterBoot(clk Clock, until, step time.Duration, f func()) *bootTimer {
	bt := &bootTimer{}
	var arm func()
	arm = func() {
		left := until - clk.Now()
		bt.mu.Lock()
		defer bt.mu.Unlock()
		if bt.stopped {
			return
		}
		if left <= 0 {
			bt.stopped = true
			go f()
			return
		}
		bt.t = time.AfterFunc(min(left, step), arm)
	}
	arm()
	return bt
}

// Stop stops the timer; f will not run if it has not started.
func (bt *bootTimer) Stop() {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	bt.stopped = true
	if bt.t != nil {
		bt.t.Stop()
	}
}
