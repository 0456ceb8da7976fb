package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// auditor campaigns for the named lease "auditor" on every node; the
// cluster grants it to one node at a time, first come first served, and
// hands it to the next waiter when the holder's session ends. The holder
// audits the ledger every auditEvery with a fenced write of its own.
type auditor struct {
	n      *node
	every  time.Duration
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	lost error // why this node's last auditor lease ended, if it did
}

func startAuditor(n *node, every time.Duration) *auditor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &auditor{n: n, every: every, cancel: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// stop ends the auditor and waits for it. A lease it holds ends with the
// node's session, at Shutdown.
func (a *auditor) stop() {
	a.cancel()
	<-a.done
}

// lostWith returns why this node's auditor lease ended (nil if it never
// held one or still holds it).
func (a *auditor) lostWith() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost
}

func (a *auditor) run(ctx context.Context) {
	defer close(a.done)
	for ctx.Err() == nil {
		l, err := a.n.c.Acquire(ctx, auditorLease) // blocks until granted
		if err != nil {
			sleep(ctx, a.every)
			continue
		}
		err = a.hold(ctx, l)
		a.mu.Lock()
		a.lost = err
		a.mu.Unlock()
	}
}

// hold audits at once and then every a.every while l is held. The lease
// check runs inside the audit's transaction (unlike a zombie's), so an
// auditor that was frozen finds out it lost the lease before it writes
// anything.
func (a *auditor) hold(ctx context.Context, l *coordinator.Lease) error {
	tick := time.NewTicker(a.every)
	defer tick.Stop()
	for {
		a.n.frz.wait() // frozen with the rest of the node
		_, err := a.n.led.audit(ctx, l.Token(), l.Checkpoint)
		if _, fenced := asFenced(err); fenced || errors.Is(err, coordinator.ErrLeaseLost) || l.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.Done(): // audit once more: the check inside says why
		case <-tick.C:
		}
	}
}
