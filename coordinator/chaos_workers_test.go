package coordinator_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// The lease workers of TestChaos: each node's workers acquire the lease
// names, write to the names' fenced registers while they hold them, release,
// and now and then write once more with an ended lease's token, as zombies.

// spawn starts node i's workers for the incarnation c.
func (r *chaosRun) spawn(i int, c *coordinator.Coordinator) {
	r.incarnation[i]++
	c.SetForwardDuplicator(r.duplicator(i))
	c.SetLessorHooks(r.noteActivation, nil)
	for k := range r.workers[i] {
		wrng := rand.New(rand.NewPCG(r.seed, uint64(i)<<32|uint64(r.incarnation[i])<<8|uint64(k)))
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.work(i, c, wrng)
		}()
	}
}

// work is one worker on node i while incarnation c runs: it campaigns,
// holds and writes, releases, and now and then writes once more as a zombie.
func (r *chaosRun) work(i int, c *coordinator.Coordinator, rng *rand.Rand) {
	nodeName := r.cl.Node(i).Name
	for r.ctx.Err() == nil && r.cl.Node(i).C() == c {
		ni := rng.IntN(len(chaosNames))
		name := chaosNames[ni]
		if *chaosExclusive {
			if !r.busy[i][ni].TryLock() {
				if !pace(r.ctx, between(rng, 10*time.Millisecond, 50*time.Millisecond)) {
					return
				}
				continue
			}
		}
		if !r.acquireOne(i, c, nodeName, name, rng) {
			if *chaosExclusive {
				r.busy[i][ni].Unlock()
			}
			return
		}
		if *chaosExclusive {
			r.busy[i][ni].Unlock()
		}
		if !pace(r.ctx, between(rng, 0, 100*time.Millisecond)) {
			return
		}
	}
}

// acquireOne runs one Acquire, hold and (maybe) zombie write; it reports
// false when the worker must stop.
func (r *chaosRun) acquireOne(i int, c *coordinator.Coordinator, nodeName, name string, rng *rand.Rand) bool {
	opCtx, cancel, kind := callCtx(r.ctx, rng)
	try := rng.Float64() < 0.2
	if try {
		kind = "try-" + kind
	}
	done := r.req.begin(i, name, kind, !try)
	var l *coordinator.Lease
	var err error
	if try {
		l, err = c.TryAcquire(opCtx, name)
	} else {
		l, err = c.Acquire(opCtx, name)
	}
	cancel()
	if err == nil {
		r.req.hold(i, name, l)
	}
	done()
	if err != nil {
		if errors.Is(err, coordinator.ErrShutdown) {
			return false
		}
		if r.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
			!errors.Is(err, coordinator.ErrLeaseHeld) {
			r.errors.Add(1)
		}
		return pace(r.ctx, between(rng, 10*time.Millisecond, 50*time.Millisecond))
	}
	g := &chaosGrant{name: name, node: i, nodeName: nodeName, token: l.Token(), acquired: time.Now(), endedOnReturn: l.Err() != nil}
	if hd, ok := c.Holder(name); ok && hd.Token == l.Token() {
		g.session = hd.Session
	}
	r.h.addGrant(g)
	recorded := make(chan struct{})
	context.AfterFunc(l.Context(), func() {
		r.h.endGrant(g, time.Now(), l.Err())
		close(recorded)
	})
	r.hold(l, g, rng)
	<-recorded
	if rng.Float64() < chaosZombieRatio {
		r.zombie(l, g)
	}
	return true
}

// hold writes under l for a random time, each write after a passing
// Checkpoint, then releases; it returns when the lease ended.
func (r *chaosRun) hold(l *coordinator.Lease, g *chaosGrant, rng *rand.Rand) {
	holdFor := time.NewTimer(between(rng, 50*time.Millisecond, 800*time.Millisecond)) // scenario pacing
	defer holdFor.Stop()
	tick := time.NewTicker(between(rng, 20*time.Millisecond, 80*time.Millisecond)) // scenario pacing
	defer tick.Stop()
	release := func() {
		r.h.releasing(g, time.Now())
		ctx, cancel := releaseCtx(rng)
		defer cancel()
		_ = l.Release(ctx) // the local belief ends first whatever the outcome
	}
	write := func() bool {
		if err := l.Checkpoint(); err != nil {
			return false
		}
		r.write(l, g, false)
		return true
	}
	if !write() {
		release()
		return
	}
	for {
		select {
		case <-l.Done():
			return
		case <-r.ctx.Done():
			release()
			return
		case <-holdFor.C:
			release()
			return
		case <-tick.C:
			if !write() {
				release()
				return
			}
		}
	}
}

// write writes token to the lease's register and records the attempt.
func (r *chaosRun) write(l *coordinator.Lease, g *chaosGrant, zombie bool) {
	res := "resource-" + g.name
	err := r.mem.Do(res, g.token, func() error {
		r.h.acceptedWrite(res, g.token)
		return nil
	})
	w := chaosWrite{name: g.name, node: g.node, token: g.token, at: time.Now(), accepted: err == nil, zombie: zombie}
	if err != nil && !errors.Is(err, fence.ErrFenced) {
		r.t.Errorf("write %s token %d: unexpected error %v\nreplay: %s", res, g.token, err, r.replay(r.seed))
	}
	if err != nil && !zombie {
		w.heldAfter = l.Err() == nil
	}
	r.h.addWrite(w)
}

// zombie models a holder that was paused while holding and wakes up after
// its lease ended and a newer holder wrote: it writes once more with its
// old token, without checking. The register must reject it.
func (r *chaosRun) zombie(l *coordinator.Lease, g *chaosGrant) {
	res := "resource-" + g.name
	err := holdfasttest.Poll(chaosZombieWait, func() error {
		if r.ctx.Err() != nil || r.mem.Highest(res) > g.token {
			return nil
		}
		return holdfasttest.ErrNotYet
	})
	if err != nil || r.mem.Highest(res) <= g.token {
		r.h.skipZombie()
		return
	}
	r.write(l, g, true)
}
