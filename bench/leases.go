package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// sessionTTL is the session TTL of every lease workload, on both systems
// (holdfast: benchConfig; etcd: concurrency.WithTTL; ZooKeeper: the
// session timeout).
const sessionTTL = 2 * time.Second

// opsResult is one round of an acquire + release loop.
type opsResult struct {
	ops     int
	elapsed time.Duration
	lat     latencies
}

func (r opsResult) perSecond() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// loop runs clients goroutines, each calling op until d has passed (an
// operation started before the deadline completes), and gathers the
// latency of every operation. op(i) runs one operation of client i.
func loop(clients int, d time.Duration, op func(i int) error) (opsResult, error) {
	var (
		mu    sync.Mutex
		all   latencies
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			var mine latencies
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := op(i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return opsResult{ops: len(all), elapsed: time.Since(start), lat: all}, first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// hfAcquireRelease runs Acquire + release (by mode) of one lease name by
// clients contenders spread over nodes (client i on nodes[i%len(nodes)]).
func hfAcquireRelease(nodes []*hfNode, clients int, d time.Duration, name string, mode releaseMode) (opsResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	return loop(clients, d, func(i int) error {
		c := nodes[i%len(nodes)].c
		l, err := c.Acquire(ctx, name)
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		if err := mode.release(l, ctx); err != nil {
			return fmt.Errorf("resign: %w", err)
		}
		return nil
	})
}

// waiterQueued reports nil once c's replica shows name held with at least
// one waiter.
func waiterQueued(c *coordinator.Coordinator, name string) func() error {
	return func() error {
		for _, l := range c.Leases() {
			if l.Name == name && l.Waiters >= 1 {
				return nil
			}
		}
		return fmt.Errorf("%w: no waiter on %s", errNotYet, name)
	}
}

// grant is when a waiter's acquire returned, and its error.
type grant struct {
	at  time.Time
	err error
}

// async runs acquire in its own goroutine and delivers the instant it
// returned.
func async(acquire func() error) <-chan grant {
	ch := make(chan grant, 1)
	go func() {
		err := acquire()
		ch <- grant{at: time.Now(), err: err}
	}()
	return ch
}

// waiterSettle is how long a queued waiter waits before the holder
// resigns in the handoff workload, on every system. It is longer than
// etcd's 100 ms watcher sync interval: a waiter's watch that starts at the
// current revision is "unsynced" until the next sync, and a delete before
// then reaches it only at that sync. A waiter that has been waiting a while
// (the usual case of a handoff) is synced.
const waiterSettle = 200 * time.Millisecond

// handoffSide is one system's steps of a graceful handoff of one name
// between a holder and a waiter.
type handoffSide struct {
	hold    func() error // the holder acquires
	wait    func() error // the waiter acquires: blocks until granted (run in a goroutine)
	queued  func() error // nil once the waiter is queued (polled)
	release func() error // the holder releases: the timed step
	done    func() error // the waiter releases
}

// measureHandoffs measures n handoffs: the waiter queues, the holder
// releases; the time is from the release call until the waiter's acquire
// returns.
func measureHandoffs(n int, s handoffSide) (latencies, error) {
	var out latencies
	for i := 0; i < n; i++ {
		if err := s.hold(); err != nil {
			return nil, fmt.Errorf("holder acquire: %w", err)
		}
		ch := async(s.wait)
		if err := poll(10*time.Second, s.queued); err != nil {
			return nil, err
		}
		time.Sleep(waiterSettle)
		t0 := time.Now()
		if err := s.release(); err != nil {
			return nil, fmt.Errorf("holder release: %w", err)
		}
		g := <-ch
		if g.err != nil {
			return nil, fmt.Errorf("waiter acquire: %w", g.err)
		}
		out = append(out, g.at.Sub(t0))
		if err := s.done(); err != nil {
			return nil, fmt.Errorf("waiter release: %w", err)
		}
	}
	return out, nil
}

// hfHandoffs measures n graceful handoffs of name from holder to waiter,
// the holder releasing by mode.
func hfHandoffs(holder, waiter *hfNode, n int, name string, mode releaseMode) (latencies, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*5*time.Second+30*time.Second)
	defer cancel()
	var held, got *coordinator.Lease
	return measureHandoffs(n, handoffSide{
		hold:    func() (err error) { held, err = holder.c.Acquire(ctx, name); return err },
		wait:    func() (err error) { got, err = waiter.c.Acquire(ctx, name); return err },
		queued:  waiterQueued(waiter.c, name),
		release: func() error { return mode.release(held, ctx) },
		done:    func() error { return got.Release(ctx) },
	})
}
