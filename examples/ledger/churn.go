package main

import (
	"context"
	"log/slog"

	"github.com/holdfast-go/holdfast/coordinator"
)

// startChurn acquires and releases the named lease churn-NODE every
// o.churn (nothing when 0), so that the raft log takes entries steadily;
// the returned function stops it and waits for it.
func startChurn(c *coordinator.Coordinator, o options, log *slog.Logger) func() {
	if o.churn == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		name := "churn-" + o.node
		for {
			sleep(ctx, o.churn)
			if ctx.Err() != nil {
				return
			}
			actx, acancel := context.WithTimeout(ctx, 2*o.ttl)
			l, err := c.Acquire(actx, name)
			if err == nil {
				err = l.Release(actx)
			}
			acancel()
			if err != nil && ctx.Err() == nil {
				log.Debug("churn", "error", err)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
