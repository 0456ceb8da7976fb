//go:build !linux && !darwin

package session

import "time"

// newSystemClock falls back to Go's monotonic clock: on these systems a
// holder resumed from suspend may keep believing for what was left of its
// belief before the suspend (the fencing token still protects resources).
func newSystemClock() Clock { return monoClock{origin: time.Now()} }
