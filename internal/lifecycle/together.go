package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Together runs every f under ctx at once, the last one on the caller's
// goroutine, and returns once every one has returned.
func Together(ctx context.Context, fs ...func(ctx context.Context)) {
	if len(fs) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, f := range fs[:len(fs)-1] {
		wg.Go(func() { f(ctx) })
	}
	fs[len(fs)-1](ctx)
	wg.Wait()
}

// Registered are the collectors Register registered, for Unregister.
type Registered struct {
	reg  prometheus.Registerer
	cols []prometheus.Collector
}

// Register registers every collector of cols on reg (nil: none), in
// order. A refused collector (another node's, on a shared registry) is
// logged, then left alone.
func Register(log *slog.Logger, reg prometheus.Registerer, cols ...[]prometheus.Collector) *Registered {
	r := &Registered{reg: reg}
	if reg == nil {
		return r
	}
	for _, group := range cols {
		for _, col := range group {
			if err := reg.Register(col); err != nil {
				log.Warn("registering metric", "error", err)
			} else {
				r.cols = append(r.cols, col)
			}
		}
	}
	return r
}

// Unregister removes the collectors Register registered; it does nothing
// for a nil r.
func (r *Registered) Unregister() {
	if r == nil {
		return
	}
	for _, col := range r.cols {
		r.reg.Unregister(col)
	}
}

// Until calls cond at once and then every interval until it returns nil
// (Until returns false, nil), ctx ends (false, cond's last error with
// ctx's in parentheses), or stop is closed (true, cond's last error).
func Until(ctx context.Context, stop <-chan struct{}, interval time.Duration, cond func() error) (stopped bool, err error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-stop:
			return true, err
		case <-tick.C:
		}
	}
}
