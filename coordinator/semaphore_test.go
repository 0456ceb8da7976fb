package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestSemaphoreCluster: three nodes share a semaphore of two permits. At
// most two hold at once, tokens increase, a third waits and gets the
// permit one releases, a killed holder's permit is freed once its session
// expires, and a fenced resource accepts each permit's token in turn. A
// monitor on a replica checks every view it sees.
func TestSemaphoreCluster(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 2*formTimeout)
	defer cancel()
	const name, limit = "workers", 2
	mon, stopMon := watchSem(ctx, cl.Node(0).C(), name, limit)
	sr := &semRun{t: t, cl: cl, name: name, limit: limit, res: fence.NewMemory(fence.MemoryConfig{})}

	a := cl.Node(0).C()
	pa, pb := sr.fill(ctx)
	pc := sr.releaseHandsOver(ctx, pa, pb)
	survivor, pa2 := sr.deathHandsOver(ctx, pb, pc)
	for _, p := range []*coordinator.Permit{survivor, pa2} {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cl.WaitFor("semaphore empty", formTimeout, func() error {
		if hs := a.Semaphore(name); len(hs) != 0 {
			return fmt.Errorf("%w: %+v", holdfasttest.ErrNotYet, hs)
		}
		return nil
	})
	stopMon()
	mon.mu.Lock()
	defer mon.mu.Unlock()
	if len(mon.errs) > 0 {
		t.Fatalf("monitor: %v", mon.errs)
	}
	if mon.maxSeen != limit {
		t.Fatalf("monitor saw at most %d holders, want %d", mon.maxSeen, limit)
	}
}

// TestSemaphoreCancelledAcquireHoldsNothing: a waiting AcquireSemaphore
// whose context ends leaves the queue, so the permit a release frees goes
// to the next live request, not to the cancelled one.
func TestSemaphoreCancelledAcquireHoldsNothing(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	p, err := c.AcquireSemaphore(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.AcquireSemaphore(wctx, "s", 1)
		errc <- err
	}()
	cl.WaitFor("queued", formTimeout, func() error {
		if len(c.SemaphoreWaiters("s")) != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	wcancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	cl.WaitFor("queue left", formTimeout, func() error {
		if len(c.SemaphoreWaiters("s")) != 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil { // the replica may lag this node's release
		t.Fatal(err)
	}
	if hs := c.SemaphoreHolders("s"); len(hs) != 0 {
		t.Fatalf("after the release, the semaphore is held by %+v", hs)
	}
}

// TestPermitEndsWhenReplicaDropsIt: a permit whose grant the replica no
// longer shows ends with ErrLeaseLost, and its freed slot goes to the
// waiter.
func TestPermitEndsWhenReplicaDropsIt(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	p, err := c.AcquireSemaphore(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *coordinator.Permit, 1)
	go func() {
		q, err := c.AcquireSemaphore(ctx, "s", 1)
		if err != nil {
			t.Error(err)
		}
		got <- q
	}()
	cl.WaitFor("queued", formTimeout, func() error {
		if len(c.SemaphoreWaiters("s")) != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if err := c.CommitPermitRelease(ctx, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatal("the permit did not end when the replica dropped it")
	}
	if err := p.Checkpoint(); !errors.Is(err, coordinator.ErrLeaseLost) {
		t.Fatalf("dropped permit's checkpoint: %v", err)
	}
	q := <-got
	if q == nil {
		t.FailNow()
	}
	if q.Token() <= p.Token() {
		t.Fatalf("tokens %d then %d", p.Token(), q.Token())
	}
	if err := q.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// testTimedOutForwardedSemaphoreAcquireLeavesNoPermit: an acquire
// forwarded by a follower whose answer arrives after the caller's deadline
// (the leader committed the grant) must not leave the follower holding the
// only permit: the node settles the request.
func testTimedOutForwardedSemaphoreAcquireLeavesNoPermit(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f, other := followersOf(t, cl, leader)
	waitReady(t, f) // without a session TryAcquireSemaphore fails anyway, and the test would show nothing
	heal := lateAnswers(cl, leader, f, 700*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := f.C().TryAcquireSemaphore(ctx, "orphan-permit", 1)
	cancel()
	heal()
	if err == nil {
		t.Fatal("TryAcquireSemaphore succeeded although its answer was delayed past its deadline")
	}
	t.Logf("TryAcquireSemaphore: %v", err)
	ttl := leader.Config.Session.TTL
	var last error
	err = holdfasttest.Poll(3*ttl, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		p, err := other.C().TryAcquireSemaphore(ctx, "orphan-permit", 1)
		if err != nil {
			last = err
			return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, err)
		}
		return p.Release(ctx)
	})
	if err != nil {
		t.Fatalf("another node could not take the permit within 3 × TTL after a timed-out acquire: %v (last %v); holders %+v (follower's session %s)",
			err, last, leader.C().SemaphoreHolders("orphan-permit"), f.C().SessionID())
	}
}

// TestSemaphoreRefusalMessages: a refused acquire says why once, with the
// state machine's detail, and wraps both its kind and ErrRejected.
func TestSemaphoreRefusalMessages(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	p, err := c.AcquireSemaphore(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.TryAcquireSemaphore(ctx, "s", 1)
	if want := "holdfast: semaphore has no free permit: 1 of 1 permits of s held"; err == nil || err.Error() != want ||
		!errors.Is(err, coordinator.ErrRejected) || !errors.Is(err, coordinator.ErrSemaphoreFull) {
		t.Errorf("full: %v, want %q wrapping ErrRejected", err, want)
	}
	_, err = c.TryAcquireSemaphore(ctx, "s", 3)
	if want := "holdfast: semaphore limit differs from its holders': s has limit 1, not 3"; err == nil || err.Error() != want ||
		!errors.Is(err, coordinator.ErrSemaphoreLimit) {
		t.Errorf("limit: %v, want %q", err, want)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
