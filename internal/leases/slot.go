package leases

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// slot is the local queue of one lease name: the cluster sees one session
// per node, so one local caller at a time asks for (or holds) the name, and
// the others wait here, first come, first served. A caller that releases
// with a local caller waiting hands the name over (see handOver): its
// release and the next caller's acquire are one log entry.
type slot struct {
	mu    sync.Mutex
	taken bool
	// asking, while not nil, is closed once the turn's acquire is answered
	// (granted or queued) or the turn ends: a local TryAcquire waits for
	// it rather than refuse a name nobody may hold yet (see takeSlot).
	asking chan struct{}
	tries  int // TryAcquires waiting for asking
	queue  []*slotWaiter
}

// slotWaiter is one local caller waiting for its turn.
type slotWaiter struct {
	r     Request
	ctx   context.Context // the waiting acquire's (for the settle hook)
	ready chan handed     // receives the turn, once
	// claimed: a releasing caller took the waiter out of the queue and
	// will hand it its turn; gone: the waiter stopped waiting after that,
	// so whoever holds its turn disposes of it (Manager.dispose).
	claimed, gone bool
}

// handed is what a waiter is given with its turn: nothing (it asks the
// cluster itself), what the handover that asked for it returned (made), or
// the request a handover of unknown outcome asked under (reuse: the
// waiter asks again under it, so that whatever the handover did for it is
// what the waiter's acquire answers).
type handed struct {
	made  bool // res and err are the handover's answer for s and req
	reuse bool // the handover's outcome is unknown: ask under s and req
	s     *session.Session
	req   uint64
	res   Result
	err   error
}

// localSlot returns the slot of the lease name.
func (p *Manager) localSlot(name string) *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	sl, ok := p.slots[name]
	if !ok {
		sl = new(slot)
		p.slots[name] = sl
	}
	return sl
}

// takeSlot takes sl for r, waiting for its turn if r.Wait (until ctx ends
// or the part closes), else failing at once with wire.ErrLeaseHeld.
//
// A TryAcquire is refused only while the local turn holds the name, waits
// in the cluster's queue (someone else holds it) or releases it: while the
// turn's own acquire is still unanswered the name may be free, and the
// refusal would say otherwise, so it waits for that answer first.
func (p *Manager) takeSlot(ctx context.Context, sl *slot, r Request) (handed, error) {
	sl.mu.Lock()
	for !r.Wait && sl.taken && sl.asking != nil {
		asking := sl.asking
		sl.tries++
		sl.mu.Unlock()
		var err error
		select {
		case <-asking:
		case <-ctx.Done():
			err = ctx.Err()
		case <-p.ctx.Done():
			err = wire.ErrShutdown
		}
		sl.mu.Lock()
		sl.tries--
		if err != nil {
			sl.mu.Unlock()
			p.askedNothing(ctx, r.Name)
			return handed{}, err
		}
	}
	if !sl.taken {
		sl.taken = true
		sl.asking = make(chan struct{})
		sl.mu.Unlock()
		return handed{}, nil
	}
	if !r.Wait {
		sl.mu.Unlock()
		return handed{}, fmt.Errorf("%w (by this node)", wire.ErrLeaseHeld)
	}
	w := &slotWaiter{r: r, ctx: ctx, ready: make(chan handed, 1)}
	sl.queue = append(sl.queue, w)
	sl.mu.Unlock()
	select {
	case h := <-w.ready:
		return h, nil
	case <-ctx.Done():
		return handed{}, p.leaveSlot(sl, w, ctx.Err())
	case <-p.ctx.Done():
		return handed{}, p.leaveSlot(sl, w, wire.ErrShutdown)
	}
}

// leaveSlot takes w, whose caller stops waiting with err, out of sl's
// queue; a turn already handed to it, or on its way, is disposed of.
func (p *Manager) leaveSlot(sl *slot, w *slotWaiter, err error) error {
	sl.mu.Lock()
	if !w.claimed {
		sl.queue = slices.DeleteFunc(sl.queue, func(o *slotWaiter) bool { return o == w })
		sl.mu.Unlock()
		p.askedNothing(w.ctx, w.r.Name)
		return err
	}
	select {
	case h := <-w.ready:
		sl.mu.Unlock()
		p.dispose(sl, w, h)
	default:
		w.gone = true
		sl.mu.Unlock()
	}
	return err
}

// freeSlot ends the current turn of sl: the first waiter gets the next one
// (and asks the cluster itself), or the slot is free.
func (p *Manager) freeSlot(sl *slot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.answeredLocked()
	if len(sl.queue) == 0 {
		sl.taken = false
		return
	}
	w := sl.queue[0]
	sl.queue = sl.queue[1:]
	w.claimed = true
	sl.give(w, handed{})
}

// give hands w the turn with h; sl.mu is held. A turn without a handover's
// answer starts asking.
func (sl *slot) give(w *slotWaiter, h handed) {
	if !h.made {
		sl.asking = make(chan struct{})
	}
	w.ready <- h
}

// ask marks the turn's acquire unanswered again (sl may be nil): it asks
// anew (a new session, a stale answer).
func (sl *slot) ask() {
	if sl == nil {
		return
	}
	sl.mu.Lock()
	if sl.asking == nil {
		sl.asking = make(chan struct{})
	}
	sl.mu.Unlock()
}

// answered marks the turn's acquire answered (granted or queued); sl may
// be nil (a semaphore).
func (sl *slot) answered() {
	if sl == nil {
		return
	}
	sl.mu.Lock()
	sl.answeredLocked()
	sl.mu.Unlock()
}

func (sl *slot) answeredLocked() {
	if sl.asking != nil {
		close(sl.asking)
		sl.asking = nil
	}
}

// waiting reports whether a local caller waits for sl's turn.
func (sl *slot) waiting() bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.queue) > 0
}

// claim takes sl's first waiter out of the queue for a handover, or
// returns nil when nobody waits. The turn stays taken until pass.
func (sl *slot) claim() *slotWaiter {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if len(sl.queue) == 0 {
		return nil
	}
	w := sl.queue[0]
	sl.queue = sl.queue[1:]
	w.claimed = true
	return w
}

// pass hands the turn, with h, to the claimed waiter w; if w stopped
// waiting meanwhile, h is disposed of instead.
func (p *Manager) pass(sl *slot, w *slotWaiter, name string, h handed) {
	sl.mu.Lock()
	if !w.gone {
		sl.give(w, h)
		sl.mu.Unlock()
		return
	}
	sl.mu.Unlock()
	p.dispose(sl, w, h)
}

// dispose ends the turn of w, which stopped waiting: what its handover may
// have been granted or queued is given up in the background, and the next
// waiter gets the turn.
func (p *Manager) dispose(sl *slot, w *slotWaiter, h handed) {
	name := w.r.Name
	switch {
	case h.reuse || h.made && (h.err == nil || p.mayHaveCommitted(h.err) && !errors.Is(h.err, wire.ErrShutdown)):
		p.settleThen(Lease, h.s, name, h.req, 0, opAcquire, p.hookSettle(w.ctx, name, h.req))
	case !h.made:
		p.askedNothing(w.ctx, name)
	}
	p.freeSlot(sl)
}
