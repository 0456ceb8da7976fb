package lifecycle

import (
	"context"
	"log/slog"
	"sync"

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
