package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
)

// WatchSemaphore calls f with the named semaphore's holders in every view
// the local replica publishes (views published faster than f runs may be
// skipped), until ctx ends.
func (c *Coordinator) WatchSemaphore(ctx context.Context, name string, f func(index uint64, holders []fsm.SemHolder)) {
	for {
		v := c.fsm.View()
		s, _ := v.Semaphore(name)
		f(v.Index(), s.Holders)
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		}
	}
}

// SemaphoreWaiters returns the requests queued for the named semaphore in
// the local replica.
func (c *Coordinator) SemaphoreWaiters(name string) []fsm.Waiter {
	s, _ := c.fsm.View().Semaphore(name)
	return s.Waiters
}

// CommitPermitRelease commits the release of p's request without ending
// p's local belief (as a late settlement or another replica's view of it
// would), so the permit's watcher must notice it.
func (c *Coordinator) CommitPermitRelease(ctx context.Context, p *Permit) error {
	_, err := c.commitRetry(ctx, leases.Semaphore.ReleaseCmd(p.Name(), p.g.SessionID(), p.g.Request(), p.Token()))
	return err
}
