package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// workers is one node's coordinator.ShardHandler. Serve starts a worker
// for the shard under the lease's context; the worker appends to the
// shard's ledger every interval, checking the lease inside each write
// transaction. HandOff stops the worker and waits for it, so the shard is
// handed off only after its last write ended.
type workers struct {
	led      *ledger
	frz      *freezer
	interval time.Duration

	// ctx carries the zombies' database calls, which must outlive their
	// leases; close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	running map[*coordinator.ShardLease]*worker
	wg      sync.WaitGroup
}

var _ coordinator.ShardHandler = (*workers)(nil)

type worker struct {
	lease *coordinator.ShardLease
	stop  chan struct{} // closed by HandOff
	once  sync.Once
	done  chan struct{} // closed when the worker returned
}

func newWorkers(led *ledger, frz *freezer, interval time.Duration) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{led: led, frz: frz, interval: interval, ctx: ctx, cancel: cancel,
		running: map[*coordinator.ShardLease]*worker{}}
}

// Serve starts the worker and returns at once; ctx is the lease's
// context and ends the moment this node stops believing it owns the shard.
func (ws *workers) Serve(ctx context.Context, l *coordinator.ShardLease) {
	w := &worker{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	ws.mu.Lock()
	ws.running[l] = w
	ws.wg.Add(1)
	ws.mu.Unlock()
	go func() {
		defer ws.wg.Done()
		defer close(w.done)
		ws.run(ctx, w)
		ws.mu.Lock()
		delete(ws.running, l)
		ws.mu.Unlock()
	}()
}

// HandOff stops the worker and waits until its write in progress ended;
// holdfast grants the shard to the next owner only after HandOff returns.
func (ws *workers) HandOff(ctx context.Context, l *coordinator.ShardLease) error {
	ws.mu.Lock()
	w := ws.running[l]
	ws.mu.Unlock()
	if w == nil {
		return nil
	}
	w.once.Do(func() { close(w.stop) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// count returns the number of running workers.
func (ws *workers) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.running)
}

// close waits for every worker (after Shutdown ended their leases).
func (ws *workers) close() {
	ws.cancel()
	ws.wg.Wait()
}

// run appends every interval until the lease ends or HandOff stops it.
// When the node's freezer is on, the worker turns into a zombie instead.
func (ws *workers) run(ctx context.Context, w *worker) {
	shard := int64(w.lease.Shard())
	if err := ws.led.initShard(ctx, shard); err != nil {
		return // only the lease's end or a broken database gets here
	}
	tick := time.NewTicker(ws.interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if ws.frz.on() && ws.zombie(w) {
			return
		}
		err := ws.led.appendEntry(ctx, shard, w.lease.Token(), w.lease.Checkpoint)
		if _, fenced := asFenced(err); fenced || errors.Is(err, coordinator.ErrLeaseLost) {
			return // a newer owner exists: stop; never seen while holdfast is right
		}
		// ErrLeaseExpiring (a keepalive may still renew it) or a busy
		// database: skip this write, try again at the next tick.
	}
}

// zombie is what a worker does when its process stops between its lease
// check and its write: it passes the check, then waits, token in hand,
// until the process runs again, and writes without checking again (it
// has no idea time passed). Only the fence can stop that write. It
// reports whether the worker is done; false (the check found the lease
// about to expire, or the freezer was off by then) means it goes on.
func (ws *workers) zombie(w *worker) bool {
	if err := w.lease.Checkpoint(); err != nil {
		return errors.Is(err, coordinator.ErrLeaseLost) // lost: nothing stale to write
	}
	z := ws.frz.hold(w.lease) // blocks until thawed
	if z == nil {
		return false
	}
	z.err = ws.led.appendEntry(ws.ctx, int64(w.lease.Shard()), w.lease.Token(), nil)
	if f, ok := asFenced(z.err); ok {
		_ = ws.led.recordRejection(ws.ctx, int64(w.lease.Shard()), f)
	}
	ws.frz.finished()
	return true
}

// freezer holds a node's code still, as SIGSTOP would: while it is on,
// each worker that reaches it (after its lease check) waits, and so does
// the auditor, until thaw.
type freezer struct {
	mu      sync.Mutex
	thawed  chan struct{} // nil while not frozen
	zombies []*zombie
	pending sync.WaitGroup // zombies that have not finished their write
}

// zombie is a worker frozen between its lease check and its write.
type zombie struct {
	lease *coordinator.ShardLease
	ended time.Time // when this node stopped believing the lease
	err   error     // the write's outcome, once thawed
	mu    sync.Mutex
}

func (z *zombie) endedAt() time.Time {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.ended
}

// freeze turns the freezer on.
func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed == nil {
		f.thawed = make(chan struct{})
	}
}

func (f *freezer) on() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thawed != nil
}

// frozen returns the zombies held so far.
func (f *freezer) frozen() []*zombie {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*zombie(nil), f.zombies...)
}

// hold registers l's worker as a zombie and blocks until thaw; it
// returns nil at once if the freezer is off.
func (f *freezer) hold(l *coordinator.ShardLease) *zombie {
	z := &zombie{lease: l}
	f.mu.Lock()
	if f.thawed == nil {
		f.mu.Unlock()
		return nil
	}
	context.AfterFunc(l.Context(), func() {
		z.mu.Lock()
		z.ended = time.Now()
		z.mu.Unlock()
	})
	f.zombies = append(f.zombies, z)
	f.pending.Add(1)
	thawed := f.thawed
	f.mu.Unlock()
	<-thawed
	return z
}

// wait blocks while the freezer is on (the auditor's way to stop).
func (f *freezer) wait() {
	f.mu.Lock()
	thawed := f.thawed
	f.mu.Unlock()
	if thawed != nil {
		<-thawed
	}
}

func (f *freezer) finished() { f.pending.Done() }

// thaw lets everything run again and waits until every zombie made its
// write; it returns the zombies.
func (f *freezer) thaw() []*zombie {
	f.mu.Lock()
	if f.thawed != nil {
		close(f.thawed)
		f.thawed = nil
	}
	zs := f.zombies
	f.zombies = nil
	f.mu.Unlock()
	f.pending.Wait()
	return zs
}
