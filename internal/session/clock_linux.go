//go:build linux

package session

import (
	"time"

	"golang.org/x/sys/unix"
)

// bootClock reads CLOCK_BOOTTIME: monotonic, and counting suspended time.
type bootClock struct{ fallback monoClock }

func (b bootClock) Now() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return b.fallback.Now() // kernels without CLOCK_BOOTTIME (before 2.6.39)
	}
	return time.Duration(ts.Nano())
}

func newSystemClock() Clock {
	b := bootClock{fallback: monoClock{origin: time.Now()}}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return b.fallback
	}
	return b
}
