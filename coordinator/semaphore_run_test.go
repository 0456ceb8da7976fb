package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// semMonitor follows a semaphore on one node's replica and records every
// violation of "at most limit holders" and "a new permit's token is above
// every earlier one".
type semMonitor struct {
	mu      sync.Mutex
	maxSeen int
	lastTok uint64
	seen    map[uint64]bool
	errs    []string
}

func watchSem(ctx context.Context, c *coordinator.Coordinator, name string, limit int) (*semMonitor, func()) {
	m := &semMonitor{seen: map[uint64]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.WatchSemaphore(ctx, name, func(index uint64, hs []fsm.SemHolder) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.maxSeen = max(m.maxSeen, len(hs))
			if len(hs) > limit {
				m.errs = append(m.errs, fmt.Sprintf("index %d: %d holders", index, len(hs)))
			}
			for _, h := range hs {
				if m.seen[h.Token] {
					continue
				}
				if h.Token <= m.lastTok {
					m.errs = append(m.errs, fmt.Sprintf("index %d: new permit token %d after %d", index, h.Token, m.lastTok))
				}
				m.seen[h.Token], m.lastTok = true, h.Token
			}
		})
	}()
	return m, func() { cancel(); <-done }
}

// semRun is TestSemaphoreCluster's semaphore of limit permits on a cluster
// of three (a, b and c are nodes 0, 1 and 2), guarding a fenced resource.
type semRun struct {
	t     *testing.T
	cl    *holdfasttest.Cluster
	name  string
	limit int
	res   *fence.Memory
}

// write writes to the resource under p's token; it must be accepted.
func (sr *semRun) write(p *coordinator.Permit) {
	sr.t.Helper()
	if err := sr.res.Do(sr.name, p.Token(), func() error { return nil }); err != nil {
		sr.t.Fatalf("fenced write with permit %d: %v", p.Token(), err)
	}
}

// acquireAsync acquires a permit on c in the background; the permit (nil
// on an error, which fails the test) comes on got.
func (sr *semRun) acquireAsync(ctx context.Context, c *coordinator.Coordinator, got chan<- *coordinator.Permit) {
	go func() {
		p, err := c.AcquireSemaphore(ctx, sr.name, sr.limit)
		if err != nil {
			sr.t.Error(err)
		}
		got <- p
	}()
}

// waitQueued waits until c's replica shows one waiter.
func (sr *semRun) waitQueued(what string) {
	c := sr.cl.Node(2).C()
	sr.cl.WaitFor(what, formTimeout, func() error {
		if len(c.SemaphoreWaiters(sr.name)) != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
}

// fill takes both permits, on a then b, and checks that c is refused:
// the semaphore is full, and a different limit is an error.
func (sr *semRun) fill(ctx context.Context) (pa, pb *coordinator.Permit) {
	t := sr.t
	a, b, c := sr.cl.Node(0).C(), sr.cl.Node(1).C(), sr.cl.Node(2).C()
	pa, err := a.AcquireSemaphore(ctx, sr.name, sr.limit)
	if err != nil {
		t.Fatal(err)
	}
	sr.write(pa)
	pb, err = b.AcquireSemaphore(ctx, sr.name, sr.limit)
	if err != nil {
		t.Fatal(err)
	}
	sr.write(pb)
	if pb.Token() <= pa.Token() {
		t.Fatalf("tokens %d then %d", pa.Token(), pb.Token())
	}
	if err := c.WaitReady(ctx); err != nil { // TryAcquireSemaphore does not wait for a session
		t.Fatal(err)
	}
	if p, err := c.TryAcquireSemaphore(ctx, sr.name, sr.limit); !errors.Is(err, coordinator.ErrSemaphoreFull) {
		sr.emptied(p, err, 1, "TryAcquireSemaphore of a full semaphore", pa, pb)
	}
	if p, err := c.AcquireSemaphore(ctx, sr.name, sr.limit+1); !errors.Is(err, coordinator.ErrSemaphoreLimit) {
		sr.emptied(p, err, 2, "AcquireSemaphore with another limit", pa, pb)
	}
	// c's replica may not have heard of b's grant yet (b's acquire returned
	// on the leader's answer): Sync makes the read consistent.
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if hs := c.SemaphoreHolders(sr.name); len(hs) != 2 || hs[0].Node.Name != a.NodeName() || hs[1].Token != pb.Token() {
		t.Fatalf("Semaphore: %+v", hs)
	}
	return pa, pb
}

// emptied ends the test after an acquire in fill that was to be refused
// (what) returned permit p and error err. Granting p needed the given
// number of a's and b's permits to have ended; read after the acquire,
// fewer ended is a failure, and so is an error. Otherwise the machine
// stalled past their sessions' TTL before the scenario could go on, and
// the test is skipped, saying so.
func (sr *semRun) emptied(p *coordinator.Permit, err error, ended int, what string, pa, pb *coordinator.Permit) {
	t := sr.t
	t.Helper()
	n := 0
	for _, q := range []*coordinator.Permit{pa, pb} {
		if q.Err() != nil {
			n++
		}
	}
	if err != nil || n < ended {
		t.Fatalf("%s: %v (the permits of a and b: %v, %v)", what, err, pa.Err(), pb.Err())
	}
	t.Skipf("%s: granted %d; the permits of a and b ended (%v, %v): the machine stalled past their sessions' TTL before the scenario could go on",
		what, p.Token(), pa.Err(), pb.Err())
}

// releaseHandsOver queues c, releases a's permit and checks that c gets
// it under a larger token and that a's token is fenced.
func (sr *semRun) releaseHandsOver(ctx context.Context, pa, pb *coordinator.Permit) *coordinator.Permit {
	t := sr.t
	got := make(chan *coordinator.Permit, 1)
	sr.acquireAsync(ctx, sr.cl.Node(2).C(), got)
	sr.waitQueued("c queued")
	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(pa.Err(), coordinator.ErrReleased) {
		t.Fatalf("released permit ends with %v", pa.Err())
	}
	pc := <-got
	if pc == nil {
		t.FailNow()
	}
	if pc.Token() <= pb.Token() {
		t.Fatalf("c's token %d not above %d", pc.Token(), pb.Token())
	}
	sr.write(pc)
	if err := sr.res.Check(sr.name, pa.Token()); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("the released permit's token is still accepted: %v", err)
	}
	return pc
}

// deathHandsOver queues a again and kills the node of one holder (one that
// does not lead raft, so no election delays the others' keepalives): its
// permit goes to a once its session expires. It returns the surviving
// holder's permit and a's new one.
func (sr *semRun) deathHandsOver(ctx context.Context, pb, pc *coordinator.Permit) (survivor, pa2 *coordinator.Permit) {
	t, cl, a := sr.t, sr.cl, sr.cl.Node(0).C()
	got := make(chan *coordinator.Permit, 1)
	sr.acquireAsync(ctx, a, got)
	sr.waitQueued("a queued")
	victim, survivor := 1, pc
	if l := cl.WaitLeader(formTimeout); l.Name == cl.Node(1).Name {
		victim, survivor = 2, pb
	}
	dead := cl.Node(victim).Name
	cl.Kill(victim)
	pa2 = <-got
	if pa2 == nil {
		t.FailNow()
	}
	if pa2.Token() <= pc.Token() {
		t.Fatalf("a's new token %d not above %d", pa2.Token(), pc.Token())
	}
	sr.write(pa2)
	sr.checkDeadFreed(ctx, dead, survivor)
	return survivor, pa2
}

// checkDeadFreed checks, once a queued acquire got a permit after the
// killed node's death, that the permit was the killed node's: its holder
// list no longer shows it while the survivor's permit lives. On a machine
// so loaded that the survivor's session expired too (a stall longer than
// the TTL), the queued acquire may have got the survivor's permit; then
// the killed node's permit must still go, once its own session expires.
func (sr *semRun) checkDeadFreed(ctx context.Context, dead string, survivor *coordinator.Permit) {
	t, a := sr.t, sr.cl.Node(0).C()
	// a's permit came with the leader's answer; its replica may not have
	// applied the expiry yet (Semaphore reads the replica): Sync first.
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var deadHolds *coordinator.Holder
	for _, h := range a.Semaphore(sr.name) {
		if h.Node.Name == dead {
			deadHolds = &h
		}
	}
	if deadHolds == nil {
		return
	}
	// Read after the holders: a survivor that still believes now held its
	// permit when they were read, which left no permit for a but the dead
	// node's.
	if err := survivor.Err(); err == nil {
		t.Fatalf("the killed node %s still holds a permit (%+v) while the survivor holds the other", dead, *deadHolds)
	}
	t.Logf("the survivor's permit ended too (%v: the machine stalled past its session's TTL); waiting for the killed node's to go", survivor.Err())
	sr.cl.WaitFor("the killed node's permit freed", formTimeout, func() error {
		if err := a.Sync(ctx); err != nil {
			return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, err)
		}
		for _, h := range a.Semaphore(sr.name) {
			if h.Node.Name == dead {
				return fmt.Errorf("%w: %s holds %+v", holdfasttest.ErrNotYet, dead, h)
			}
		}
		return nil
	})
}
