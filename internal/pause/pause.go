package pause

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter returns d ± 10% (0 for d ≤ 0).
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/10 + rand.N(d/5+1)
}

// For waits d or until ctx ends; it reports whether d elapsed.
func For(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
