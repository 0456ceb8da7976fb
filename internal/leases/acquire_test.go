package leases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leaktest"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 5*time.Second)
}

// acquire is Acquire that must succeed.
// acquireAndRelease acquires "x" of kind k and releases it, failing the test
// if either fails; it returns the released grant.
func (h *harness) acquireAndRelease(k Kind) *Grant {
	h.t.Helper()
	g := h.acquire(req(k, "x", true))
	if err := g.Release(context.Background()); err != nil {
		h.t.Fatalf("release: %v", err)
	}
	return g
}

func (h *harness) acquire(r Request) *Grant {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g, err := h.part.Acquire(ctx, r)
	if err != nil {
		h.t.Fatalf("acquire %s %q: %v", r.Kind, r.Name, err)
	}
	return g
}

// A second local caller for a lease name this node holds neither proposes
// nor disturbs the holder: TryAcquire fails at once, Acquire waits for the
// holder's release.
func TestOneLocalContenderPerLeaseName(t *testing.T) {
	h := newHarness(t)
	a := h.acquire(req(Lease, "x", true))
	proposed := h.count(fsm.OpAcquire)

	_, err := h.part.Acquire(context.Background(), req(Lease, "x", false))
	if !errors.Is(err, errHeld) || !strings.Contains(err.Error(), "by this node") {
		t.Fatalf("TryAcquire of a name held locally: %v, want errHeld (by this node)", err)
	}
	if n := h.count(fsm.OpAcquire); n != proposed {
		t.Fatalf("TryAcquire of a name held locally proposed %d acquires", n-proposed)
	}
	if err := a.Belief().Context().Err(); err != nil {
		t.Fatalf("the holder's lease ended after a local TryAcquire: %v", context.Cause(a.Belief().Context()))
	}

	got := make(chan *Grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		g, err := h.part.Acquire(ctx, req(Lease, "x", true))
		if err != nil {
			t.Errorf("second Acquire: %v", err)
		}
		got <- g
	}()
	if err := a.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	b := <-got
	if b == nil {
		return
	}
	if cause := context.Cause(a.Belief().Context()); !errors.Is(cause, errReleased) {
		t.Fatalf("first lease ended with %v, want errReleased", cause)
	}
	_, token, request, ok := h.fsm.View().Grant("x")
	if !ok || token != b.Token() || request != b.Request() || b.Token() <= a.Token() {
		t.Fatalf("replica grant token %d request %d (ok %v); second lease token %d request %d, first token %d",
			token, request, ok, b.Token(), b.Request(), a.Token())
	}
}

// Semaphores take the same path: the fsm's limit is honoured, each permit
// carries the token the fsm minted, a local caller may hold several
// permits, a full semaphore refuses TryAcquire and queues Acquire, and a
// freed permit goes to the waiter.
func TestSemaphoreSharesThePath(t *testing.T) {
	h := newHarness(t)
	p1 := h.acquire(req(Semaphore, "s", true))
	p2 := h.acquire(req(Semaphore, "s", true))
	v := h.fsm.View()
	for _, p := range []*Grant{p1, p2} {
		token, ok := v.SemPermit("s", p.SessionID(), p.Request())
		if !ok || token != p.Token() || p.Limit() != 2 {
			t.Fatalf("permit token %d limit %d; replica token %d (ok %v)", p.Token(), p.Limit(), token, ok)
		}
	}
	if p2.Token() <= p1.Token() {
		t.Fatalf("tokens %d then %d: not increasing", p1.Token(), p2.Token())
	}
	if n := h.part.Held(Semaphore); n != 2 {
		t.Fatalf("Held(Semaphore) = %d, want 2", n)
	}

	_, err := h.part.Acquire(context.Background(), req(Semaphore, "s", false))
	if !errors.Is(err, errRejected) || !errors.Is(err, fsm.ErrSemFull) {
		t.Fatalf("TryAcquire of a full semaphore: %v, want a refusal wrapping fsm.ErrSemFull", err)
	}
	wrong := req(Semaphore, "s", false)
	wrong.Limit = 3
	if _, err := h.part.Acquire(context.Background(), wrong); !errors.Is(err, fsm.ErrSemLimit) {
		t.Fatalf("acquire with another limit: %v, want fsm.ErrSemLimit", err)
	}

	got := make(chan *Grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		g, err := h.part.Acquire(ctx, req(Semaphore, "s", true))
		if err != nil {
			t.Errorf("queued acquire: %v", err)
		}
		got <- g
	}()
	testkit.Eventually(t, "the third acquire queues", waitFor, func() error {
		if s, _ := h.fsm.View().Semaphore("s"); len(s.Waiters) != 1 {
			return fmt.Errorf("waiters %v", s.Waiters)
		}
		return nil
	})
	if err := p1.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	p3 := <-got
	if p3 == nil {
		return
	}
	token, ok := h.fsm.View().SemPermit("s", p3.SessionID(), p3.Request())
	if !ok || token != p3.Token() || p3.Token() <= p2.Token() {
		t.Fatalf("queued permit token %d; replica token %d (ok %v); previous %d", p3.Token(), token, ok, p2.Token())
	}
	if n := h.waits(Semaphore); n != 3 {
		t.Fatalf("acquire-wait observations for semaphores: %d, want 3", n)
	}
}

// When the cluster no longer has the session, the acquire ends this node's
// belief in it and asks again under the next session.
func TestNoSessionAsksAgainWithNextSession(t *testing.T) {
	for _, k := range []Kind{Lease, Semaphore} {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			gone := h.session()
			h.commit(fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: gone.ID()}})
			h.setFault(func(cmd fsm.Command) fault {
				if h.session() == gone {
					// The node's next session opens while the acquire
					// under the gone one is refused.
					h.newSession()
				}
				return pass
			})
			g := h.acquire(req(k, "x", true))
			if cause := context.Cause(gone.Context()); !errors.Is(cause, session.ErrExpired) {
				t.Fatalf("the gone session's belief: %v, want session.ErrExpired", cause)
			}
			if g.SessionID() == gone.ID() {
				t.Fatalf("granted to the gone session %s", gone.ID())
			}
		})
	}
}

// Close ends every grant with the shutdown error and refuses later
// acquires, also a caller waiting for the local slot.
func TestCloseEndsGrantsAndRefusesNew(t *testing.T) {
	h := newHarness(t)
	l := h.acquire(req(Lease, "x", true))
	p := h.acquire(req(Semaphore, "s", true))
	waiting := make(chan error, 1)
	go func() {
		_, err := h.part.Acquire(context.Background(), req(Lease, "x", true))
		waiting <- err
	}()
	h.part.Close()
	for _, g := range []*Grant{l, p} {
		if cause := ended(t, g); !errors.Is(cause, errShutdown) {
			t.Fatalf("%s ended with %v, want errShutdown", g.kind, cause)
		}
	}
	if err := <-waiting; !errors.Is(err, errShutdown) {
		t.Fatalf("a caller waiting for the slot: %v, want errShutdown", err)
	}
	if _, err := h.part.Acquire(context.Background(), req(Semaphore, "s", true)); !errors.Is(err, errShutdown) {
		t.Fatalf("acquire after Close: %v, want errShutdown", err)
	}
}

// Requests with a bad name or limit fail before anything is proposed.
func TestInvalidRequestsProposeNothing(t *testing.T) {
	h := newHarness(t)
	for _, r := range []Request{
		{Kind: Lease, Name: ""},
		{Kind: Lease, Name: strings.Repeat("n", fsm.MaxNameLength+1)},
		{Kind: Semaphore, Name: "s", Limit: 0},
		{Kind: Semaphore, Name: "s", Limit: fsm.MaxSemLimit + 1},
	} {
		if _, err := h.part.Acquire(context.Background(), r); err == nil {
			t.Fatalf("%+v: no error", r)
		}
	}
	if n := h.count(fsm.OpAcquire) + h.count(fsm.OpSemAcquire); n != 0 {
		t.Fatalf("%d acquires proposed for invalid requests", n)
	}
}
