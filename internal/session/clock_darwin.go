//go:build darwin

package session

import (
	"time"

	"golang.org/x/sys/unix"
)

// darwinClock reads CLOCK_MONOTONIC, which on macOS keeps counting while
// the system sleeps (Go's own monotonic clock does not).
type darwinClock struct{ fallback monoClock }

func (d darwinClock) Now() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return d.fallback.Now()
	}
	return time.Duration(ts.Nano())
}

func newSystemClock() Clock {
	d := darwinClock{fallback: monoClock{origin: time.Now()}}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return d.fallback
	}
	return d
}
