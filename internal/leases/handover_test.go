package leases

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// localWaiters returns how many local callers wait in name's slot.
func (h *harness) localWaiters(name string) int {
	sl := h.part.localSlot(name)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.queue)
}

// waitLocalWaiters polls until n local callers wait for name.
func (h *harness) waitLocalWaiters(name string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for h.localWaiters(name) != n {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d local callers wait for %q, want %d", h.localWaiters(name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// acquireAsync runs Acquire of lease name under ctx in the background.
func (h *harness) acquireAsync(ctx context.Context, name string) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		g, err := h.part.Acquire(ctx, req(Lease, name, true))
		out <- acquired{g, err}
	}()
	return out
}

type acquired struct {
	g   *Grant
	err error
}

// releaseToLocalWaiter starts a local Acquire of a's name, waits until it
// waits in the slot, releases a with release and returns the waiter's
// grant (released at the test's end).
func (h *harness) releaseToLocalWaiter(a *Grant, release func(*Grant, context.Context) error) *Grant {
	h.t.Helper()
	next := h.acquireAsync(context.Background(), a.Name())
	h.waitLocalWaiters(a.Name(), 1)
	if err := release(a, context.Background()); err != nil {
		h.t.Fatalf("release: %v", err)
	}
	b := <-next
	if b.err != nil {
		h.t.Fatalf("the waiter's acquire: %v", b.err)
	}
	h.t.Cleanup(func() { b.g.Release(context.Background()) })
	return b.g
}

// A release with a local caller waiting for the name is one command: the
// handover releases the grant and asks for the waiter, and the waiter is
// granted from its answer, with a later token, without a command of its
// own.
func TestReleaseHandsOverToTheLocalWaiter(t *testing.T) {
	h := newHarness(t)
	a := h.acquire(req(Lease, "x", true))
	acquires := h.count(fsm.OpAcquire)
	b := h.releaseToLocalWaiter(a, (*Grant).Release)
	if err := ended(t, a); !errors.Is(err, errReleased) {
		t.Fatalf("the released grant ended with %v", err)
	}
	if n, r, acq := h.count(fsm.OpLeaseHandover), h.count(fsm.OpRelease), h.count(fsm.OpAcquire)-acquires; n != 1 || r != 0 || acq != 0 {
		t.Fatalf("proposed %d handovers, %d releases, %d acquires; want 1, 0, 0", n, r, acq)
	}
	holder, token, request, ok := h.fsm.View().Grant("x")
	if !ok || holder != b.SessionID() || request != b.Request() || token != b.Token() || token <= a.Token() {
		t.Fatalf("replica: holder %q request %d token %d (ok %v); waiter's grant request %d token %d; released token %d",
			holder, request, token, ok, b.Request(), b.Token(), a.Token())
	}
}

// Three local callers take the name in the order they came, each release
// handing it to the next.
func TestHandoversServeLocalCallersInOrder(t *testing.T) {
	h := newHarness(t)
	a := h.acquire(req(Lease, "x", true))
	var waiting []<-chan acquired
	for i := range 3 {
		waiting = append(waiting, h.acquireAsync(context.Background(), "x"))
		h.waitLocalWaiters("x", i+1)
	}
	prev := a
	for i, w := range waiting {
		if err := prev.Release(context.Background()); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		got := <-w
		if got.err != nil {
			t.Fatalf("waiter %d: %v", i, got.err)
		}
		if got.g.Token() <= prev.Token() {
			t.Fatalf("waiter %d: token %d after %d", i, got.g.Token(), prev.Token())
		}
		prev = got.g
	}
	if err := prev.Release(context.Background()); err != nil {
		t.Fatalf("last release: %v", err)
	}
	if err := free(h.fsm.View(), Lease, "x"); err != nil {
		t.Fatal(err)
	}
	if n := h.count(fsm.OpLeaseHandover); n != 3 {
		t.Fatalf("%d handovers, want 3", n)
	}
}

// handOverToAQuitter has a local caller wait for "x" under ctx (giveUp
// cancels it) while a holds it, releases a, and has the caller give up
// while the handover that asks for it is in flight; it returns once the
// release returned.
func (h *harness) handOverToAQuitter(ctx context.Context, giveUp context.CancelFunc, a *Grant) {
	h.t.Helper()
	quitter := h.acquireAsync(ctx, "x")
	h.waitLocalWaiters("x", 1)
	inFlight, resume := make(chan struct{}), make(chan struct{})
	h.setFault(func(cmd fsm.Command) fault {
		if cmd.Op == fsm.OpLeaseHandover {
			close(inFlight)
			<-resume
		}
		return pass
	})
	released := make(chan error, 1)
	go func() { released <- a.Release(context.Background()) }()
	<-inFlight
	giveUp()
	if got := <-quitter; !errors.Is(got.err, context.Canceled) {
		h.t.Fatalf("the waiter that gave up: %v, %v", got.g, got.err)
	}
	close(resume)
	if err := <-released; err != nil {
		h.t.Fatalf("release: %v", err)
	}
}

// A waiter that gives up while the handover that asks for it is in flight
// leaves nothing held: the grant made for it is released in the
// background, and the next local caller gets the name.
func TestHandoverToAWaiterThatGaveUp(t *testing.T) {
	h := newHarness(t)
	a := h.acquire(req(Lease, "x", true))
	wctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	h.handOverToAQuitter(wctx, giveUp, a)
	h.setFault(nil)
	if h.settled(Lease.label(opAcquire)) != 1 {
		t.Fatalf("acquire settlements %v, want 1", h.settled(Lease.label(opAcquire)))
	}
	c := h.acquire(req(Lease, "x", true)) // the slot was passed on
	defer c.Release(context.Background())
	if holder, _, request, ok := h.fsm.View().Grant("x"); !ok || holder != c.SessionID() || request != c.Request() {
		t.Fatalf("replica: holder %q request %d (ok %v), want the last caller's request %d", holder, request, ok, c.Request())
	}
}

// A handover whose outcome stays unknown as the releaser's context ends
// goes on in the background: the release is settled, and the waiter asks
// again under the request the handover made for it, so no grant of its
// request can outlive its knowledge.
func TestHandoverOutcomeUnknown(t *testing.T) {
	h := newHarness(t)
	a := h.acquire(req(Lease, "x", true))
	next := h.acquireAsync(context.Background(), "x")
	h.waitLocalWaiters("x", 1)
	var dropped atomic.Pointer[fsm.Command]
	h.setFault(func(cmd fsm.Command) fault {
		if cmd.Op == fsm.OpLeaseHandover {
			dropped.Store(&cmd)
			return drop
		}
		return pass
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := a.Release(ctx); err == nil || !strings.Contains(err.Error(), "goes on in the background") {
		t.Fatalf("release whose handover never commits: %v, want it going on in the background", err)
	}
	b := <-next
	if b.err != nil {
		t.Fatalf("the waiter's acquire: %v", b.err)
	}
	defer b.g.Release(context.Background())
	if holder, _, request, ok := h.fsm.View().Grant("x"); !ok || holder != b.g.SessionID() || request != b.g.Request() {
		t.Fatalf("replica: holder %q request %d (ok %v), want the waiter's request %d", holder, request, ok, b.g.Request())
	}
	if b.g.Request() < dropped.Load().Lease.Request {
		t.Fatalf("the waiter was granted request %d, before the handover's %d", b.g.Request(), dropped.Load().Lease.Request)
	}
	// The handover, delivered late after all, grants nothing more.
	h.commit(*dropped.Load())
	if holder, token, request, ok := h.fsm.View().Grant("x"); !ok || holder != b.g.SessionID() || request != b.g.Request() || token != b.g.Token() {
		t.Fatalf("after a late copy of the handover: holder %q request %d token %d (ok %v), want the waiter's request %d token %d",
			holder, request, token, ok, b.g.Request(), b.g.Token())
	}
	if h.settled(Lease.label(opRelease)) != 1 || h.settled(Lease.label(opAcquire)) != 0 {
		t.Fatalf("settlements: release %v, acquire %v; want 1 and 0", h.settled(Lease.label(opRelease)), h.settled(Lease.label(opAcquire)))
	}
}

// ReleaseBeforeCommit does not hand over: its release is submitted on its
// own, and the waiter asks itself.
func TestReleaseBeforeCommitDoesNotHandOver(t *testing.T) {
	h := newHarness(t)
	h.releaseToLocalWaiter(h.acquire(req(Lease, "x", true)), (*Grant).ReleaseBeforeCommit)
	if n := h.count(fsm.OpLeaseHandover); n != 0 {
		t.Fatalf("%d handovers after ReleaseBeforeCommit", n)
	}
}

// While a node of an older release (a session created without the
// handover's command level) is live, nobody hands over: its replica would
// refuse the command. The release and the waiter's acquire are then two
// commands, as before.
func TestNoHandoverWhileAnOlderNodeIsLive(t *testing.T) {
	h := newHarness(t)
	h.commit(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: "old", Node: "n-old", NodeID: "id-old", TTLNanos: int64(time.Minute)}})
	b := h.releaseToLocalWaiter(h.acquire(req(Lease, "x", true)), (*Grant).Release)
	if n, r := h.count(fsm.OpLeaseHandover), h.count(fsm.OpRelease); n != 0 || r != 1 {
		t.Fatalf("proposed %d handovers and %d releases with an older node live; want 0 and 1", n, r)
	}
	// Once the older node's session is gone, releases hand over.
	h.commit(fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: "old"}})
	h.releaseToLocalWaiter(b, (*Grant).Release)
	if n := h.count(fsm.OpLeaseHandover); n != 1 {
		t.Fatalf("%d handovers once every node reads them, want 1", n)
	}
}

// tryWaiting polls until n local TryAcquires of name wait for the local
// turn's answer.
func (h *harness) tryWaiting(name string, n int) {
	h.t.Helper()
	sl := h.part.localSlot(name)
	deadline := time.Now().Add(waitFor)
	for {
		sl.mu.Lock()
		got := sl.tries
		sl.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d TryAcquires of %q wait, want %d", got, name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A local TryAcquire while another local caller's acquire is unanswered
// waits for the answer: the name may still be free, and refusing it
// would say it is held. Once the acquire is granted it is refused; once it
// failed, it asks itself.
func TestTryAcquireWaitsForALocalAsk(t *testing.T) {
	h := newHarness(t)
	inFlight, resume := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	h.setFault(func(cmd fsm.Command) fault {
		if cmd.Op == fsm.OpAcquire && once.CompareAndSwap(false, true) {
			close(inFlight)
			<-resume
		}
		return pass
	})
	first := h.acquireAsync(context.Background(), "x")
	<-inFlight
	try := make(chan error, 1)
	go func() {
		g, err := h.part.Acquire(context.Background(), req(Lease, "x", false))
		if g != nil {
			g.Release(context.Background())
		}
		try <- err
	}()
	h.tryWaiting("x", 1)
	select {
	case err := <-try:
		t.Fatalf("TryAcquire answered %v while the local acquire was unanswered", err)
	default:
	}
	close(resume)
	a := <-first
	if a.err != nil {
		t.Fatalf("the first acquire: %v", a.err)
	}
	if err := <-try; !errors.Is(err, errHeld) {
		t.Fatalf("TryAcquire once the local acquire was granted: %v, want errHeld", err)
	}
	if err := a.g.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The local acquire fails unanswered: the TryAcquire then asks itself.
	block := make(chan struct{})
	h.setFault(func(cmd fsm.Command) fault {
		if cmd.Op == fsm.OpAcquire && cmd.Lease.Wait {
			<-block
			return drop
		}
		return pass
	})
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	failing := h.acquireAsync(ctx, "x")
	h.waitAsking("x")
	go func() {
		g, err := h.part.Acquire(context.Background(), req(Lease, "x", false))
		if err == nil {
			err = g.Release(context.Background())
		}
		try <- err
	}()
	h.tryWaiting("x", 1)
	giveUp()
	close(block)
	if f := <-failing; f.err == nil {
		t.Fatal("the dropped acquire succeeded")
	}
	if err := <-try; err != nil {
		t.Fatalf("TryAcquire after the local acquire failed: %v", err)
	}
}

// waitAsking polls until name's local turn asks the cluster.
func (h *harness) waitAsking(name string) {
	h.t.Helper()
	sl := h.part.localSlot(name)
	deadline := time.Now().Add(waitFor)
	for {
		sl.mu.Lock()
		asking := sl.taken && sl.asking != nil
		sl.mu.Unlock()
		if asking {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the local turn of %q does not ask", name)
		}
		time.Sleep(time.Millisecond)
	}
}
