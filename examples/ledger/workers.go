package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
)

// workers is the node's coordinator.ShardHandler: Serve starts one worker
// per shard lease, which loads the shard's state (or takes what Prepare
// loaded before a planned move, see warmup.go) and appends to the shard's
// ledger every interval; HandOff stops it and waits for it, so a shard is
// only released once its last write has ended.
type workers struct {
	led      *ledger
	out      *printer
	log      *slog.Logger
	metrics  *metrics
	interval time.Duration
	check    bool          // -check-before-write
	warmup   time.Duration // -shard-warmup: the extra time loading a shard's state takes

	// ctx carries the database calls; close cancels it once every worker
	// was asked to stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	running map[*coordinator.ShardLease]*worker
	warm    map[coordinator.ShardID]shardState // loaded by Prepare, for the next Serve
	wg      sync.WaitGroup
}

var _ coordinator.ShardPreparer = (*workers)(nil)

// worker appends to one shard under one lease.
type worker struct {
	lease    *coordinator.ShardLease
	stop     chan struct{} // closed by halt
	stopOnce sync.Once
	done     chan struct{} // closed when the worker has returned
	wrote    bool          // an append under this lease was accepted
}

// halt asks the worker to stop after its write in progress, if any.
func (w *worker) halt() { w.stopOnce.Do(func() { close(w.stop) }) }

func newWorkers(led *ledger, out *printer, log *slog.Logger, m *metrics, interval time.Duration, check bool) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{led: led, out: out, log: log, metrics: m, interval: interval, check: check,
		ctx: ctx, cancel: cancel, running: map[*coordinator.ShardLease]*worker{}, warm: map[coordinator.ShardID]shardState{}}
}

// Serve starts the shard's worker and returns at once. The worker
// follows the lease (see run); ctx is the lease's context, l.Context().
func (ws *workers) Serve(_ context.Context, l *coordinator.ShardLease) {
	w := &worker{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	ws.mu.Lock()
	ws.running[l] = w
	ws.wg.Add(1)
	ws.mu.Unlock()
	ws.out.say("acquired", "shard", l.Shard(), "token", l.Token())
	go func() {
		defer ws.wg.Done()
		defer close(w.done)
		ws.run(w)
		ws.mu.Lock()
		delete(ws.running, l)
		ws.mu.Unlock()
	}()
}

// HandOff stops the shard's worker and waits until its write in progress,
// if any, has ended: holdfast commits the release (and grants the shard to
// the next owner) only after HandOff returns. ctx ends after the drain
// timeout.
func (ws *workers) HandOff(ctx context.Context, l *coordinator.ShardLease) error {
	ws.mu.Lock()
	w := ws.running[l]
	ws.mu.Unlock()
	if w == nil {
		return nil // it stopped by itself: fenced, or its check failed
	}
	ws.announceNext(l)
	w.halt()
	select {
	case <-w.done:
		ws.out.say("released", "shard", l.Shard(), "token", l.Token())
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// close stops every worker still running (after Shutdown, whose handoff
// stopped the others) and waits for them.
func (ws *workers) close() {
	ws.mu.Lock()
	for _, w := range ws.running {
		w.halt()
	}
	ws.mu.Unlock()
	ws.cancel()
	ws.wg.Wait()
}

// run appends to the shard every interval until HandOff stops it, the
// fence refuses a write, or the lease check fails. It does not watch the
// lease's context between writes: with -check-before-write the check inside
// each transaction is what stops it; without, only the fence does, and a
// worker whose lease has ended still makes one more attempt, as a process
// paused between its check and its write would.
func (ws *workers) run(w *worker) {
	shard := int64(w.lease.Shard())
	if err := ws.led.initShard(ws.ctx, shard); err != nil {
		ws.log.Error("creating the shard's fence row", "shard", shard, "error", err)
	}
	lctx, cancel := context.WithCancel(w.lease.Context())
	defer cancel()
	go func() { // a drain that begins during the load cuts it short
		select {
		case <-w.stop:
			cancel()
		case <-lctx.Done():
		}
	}()
	st, prepared, err := ws.warmState(lctx, w.lease.Shard())
	cancel()
	if err != nil && w.lease.Err() == nil {
		ws.log.Warn("loading the shard's state", "shard", shard, "error", err)
	}
	ws.out.say("loaded", "shard", shard, "token", w.lease.Token(), "rows", st.rows, "prepared", prepared)
	// The first write goes out at once; then one every interval.
	if !ws.writeOnce(w) {
		return
	}
	tick := time.NewTicker(ws.interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		if !ws.writeOnce(w) {
			return
		}
	}
}

// writeOnce makes one write unless the worker was stopped, and reports
// whether it may go on.
func (ws *workers) writeOnce(w *worker) bool {
	select {
	case <-w.stop:
		return false
	default:
	}
	ended := w.lease.Err() != nil
	if !ws.write(w) || ended {
		ws.out.say("lost", "shard", w.lease.Shard(), "token", w.lease.Token())
		return false
	}
	return true
}

// write makes one append under w's lease and reports whether the worker
// may go on.
func (ws *workers) write(w *worker) bool {
	l := w.lease
	var check func() error
	if ws.check {
		check = l.Checkpoint
	}
	seq, err := ws.led.appendEntry(ws.ctx, int64(l.Shard()), l.Token(), check)
	fenced, isFenced := asFenced(err)
	switch {
	case err == nil:
		ws.metrics.writes.WithLabelValues(outcomeAccepted).Inc()
		if !w.wrote {
			w.wrote = true
			ws.out.say("wrote", "shard", l.Shard(), "token", l.Token(), "seq", seq)
		}
		return true
	case isFenced:
		ws.metrics.writes.WithLabelValues(outcomeFenced).Inc()
		if err := ws.led.recordRejection(ws.ctx, int64(l.Shard()), fenced); err != nil {
			ws.log.Error("recording a rejected write", "shard", l.Shard(), "error", err)
		}
		ws.out.say("rejected", "shard", l.Shard(), "token", l.Token(), "fence", fenced.Highest)
		return false
	case errors.Is(err, coordinator.ErrLeaseLost), errors.Is(err, coordinator.ErrLeaseExpiring):
		ws.metrics.writes.WithLabelValues(outcomeCheckFailed).Inc()
		ws.out.say("check-failed", "shard", l.Shard(), "token", l.Token())
		ws.log.Info("lease check failed; write aborted", "shard", l.Shard(), "token", l.Token(), "error", err)
		// Expiring: less than the margin is left, but a keepalive may still
		// renew the lease; skip this write. Lost: stop.
		return !errors.Is(err, coordinator.ErrLeaseLost)
	case errors.Is(err, fence.ErrNoRow):
		ws.metrics.writes.WithLabelValues(outcomeError).Inc()
		ws.log.Error("the shard has no fence row", "shard", l.Shard(), "error", err)
		return false
	default: // the database: busy for longer than its timeout, closed…
		ws.metrics.writes.WithLabelValues(outcomeError).Inc()
		if ws.ctx.Err() == nil {
			ws.log.Warn("append failed; retrying", "shard", l.Shard(), "token", l.Token(), "error", err)
		}
		return true
	}
}
