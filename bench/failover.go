package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// phase sleeps a uniformly random time of up to one session TTL, so that
// the kill lands at a uniformly random point of the holder's keepalive
// cycle on every system, whatever the cycle's phase when the sleep began:
// the TTL is a whole number of each system's cycles (holdfast and ZooKeeper
// renew every TTL/3; etcd's client every second at a 2 s TTL, its TTL/3
// rounded up to the 500 ms tick of its send loop). A sleep of up to TTL/3,
// as before, put etcd's kills in the first 700 ms of its 1 s cycle (its
// holder's session is new): not a uniform phase, and its kills clustered.
func phase() { time.Sleep(rand.N(sessionTTL)) }

// failoverSide is one system's steps of a failover of one name: a holder
// of its own (a fresh node or client, set up by the caller) and a waiter.
type failoverSide struct {
	hold   func() error // the holder acquires
	wait   func() error // the waiter acquires: blocks until granted (run in a goroutine)
	queued func() error // nil once the waiter is queued (polled)
	kill   func()       // the holder dies: its keepalives stop, nothing is released
	done   func() error // the waiter releases
}

// measureFailover measures one failover: the holder takes the name, the
// waiter queues, the holder is killed at a random point of its keepalive
// cycle, and the time runs until the waiter's acquire returns.
func measureFailover(s failoverSide) (time.Duration, error) {
	if err := s.hold(); err != nil {
		return 0, fmt.Errorf("holder acquire: %w", err)
	}
	ch := async(s.wait)
	if err := poll(10*time.Second, s.queued); err != nil {
		return 0, err
	}
	phase()
	t0 := time.Now()
	s.kill()
	g := <-ch
	if g.err != nil {
		return 0, fmt.Errorf("waiter acquire: %w", g.err)
	}
	return g.at.Sub(t0), s.done()
}

// hfFailover measures one failover of name: the holder is a fresh
// non-voter node (no data dir, drained of shards so that no shard moves
// during the measurement), and killing it closes its coordinator at once (a
// crash: no resign, no session close, no leave).
func hfFailover(h *hfCluster, waiter *hfNode, name string) (time.Duration, error) {
	x, err := h.add(false)
	if err != nil {
		return 0, err
	}
	defer h.kill(x)
	if err := poll(30*time.Second, x.c.Ready); err != nil {
		return 0, fmt.Errorf("holder node: %w", err)
	}
	if err := drainNode(x, 10*time.Second); err != nil {
		return 0, fmt.Errorf("draining the holder node: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder := x.c
	var got *coordinator.Lease
	return measureFailover(failoverSide{
		hold:   func() error { _, err := holder.Acquire(ctx, name); return err },
		wait:   func() (err error) { got, err = waiter.c.Acquire(ctx, name); return err },
		queued: waiterQueued(waiter.c, name),
		kill:   func() { h.kill(x) },
		done:   func() error { return got.Release(ctx) },
	})
}
