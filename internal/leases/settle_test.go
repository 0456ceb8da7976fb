package leases

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

var kinds = []Kind{Lease, Semaphore}

func isAcquire(cmd fsm.Command) bool { return cmd.Op == fsm.OpAcquire || cmd.Op == fsm.OpSemAcquire }
func isRelease(cmd fsm.Command) bool { return cmd.Op == fsm.OpRelease || cmd.Op == fsm.OpSemRelease }

// An acquire whose caller's context ended after the command committed (the
// answer never reached the caller) is settled: a release naming the request
// is proposed until it commits, so the grant does not outlive the call.
// The first release attempts are lost, so the settlement must retry.
func TestCancelledAcquireAfterCommitIsSettled(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			releases := 0
			h.mu.Lock()
			h.cancel = cancel
			h.mu.Unlock()
			h.setFault(func(cmd fsm.Command) fault {
				switch {
				case isAcquire(cmd):
					return cancelAfter
				case isRelease(cmd):
					releases++ // settlements run one at a time here
					if releases <= 2 {
						return drop
					}
				}
				return pass
			})
			if _, err := h.part.Acquire(ctx, req(k, "x", true)); !errors.Is(err, context.Canceled) {
				t.Fatalf("acquire: %v, want context.Canceled", err)
			}
			if h.count(k.acquireCmd(Request{}, "", 0).Op) != 1 {
				t.Fatal("the acquire was not proposed once")
			}
			testkit.Eventually(t, "the committed grant is released", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			if got := h.settled(k.label(opAcquire)); got != 1 {
				t.Fatalf("settlements %q = %v, want 1", k.label(opAcquire), got)
			}
			if n := h.count(k.ReleaseCmd("", "", 0, 0).Op); n != 3 {
				t.Fatalf("%d releases proposed, want 3 (two lost, one committed)", n)
			}
		})
	}
}

// A queued acquire whose caller gives up leaves the queue: when the holder
// releases, the name is free, not granted to nobody's caller.
func TestCancelledQueuedAcquireLeavesQueue(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			h.other("o")
			holders := 1
			if k == Semaphore {
				holders = 2
			}
			var reqs []uint64
			for i := range holders {
				r := uint64(100 + i)
				reqs = append(reqs, r)
				cmd := k.acquireCmd(req(k, "x", true), "o", r)
				if res, _ := h.commit(cmd); res.Err != nil || res.Queued {
					t.Fatalf("the other session's acquire: %+v", res)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := h.part.Acquire(ctx, req(k, "x", true))
				errc <- err
			}()
			testkit.Eventually(t, "the acquire queues", waitFor, func() error {
				if n := len(waiters(h.fsm.View(), k, "x")); n != 1 {
					return fmt.Errorf("%d waiters", n)
				}
				return nil
			})
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("acquire: %v, want context.Canceled", err)
			}
			testkit.Eventually(t, "the queue entry is settled", waitFor, func() error {
				if w := waiters(h.fsm.View(), k, "x"); len(w) != 0 {
					return fmt.Errorf("waiters %v", w)
				}
				return nil
			})
			for _, r := range reqs {
				h.commit(k.ReleaseCmd("x", "o", r, 0))
			}
			if err := free(h.fsm.View(), k, "x"); err != nil {
				t.Fatalf("after the holder released: %v", err)
			}
		})
	}
}

// waiters returns the requests queued for name in v.
func waiters(v *fsm.View, k Kind, name string) []fsm.Waiter {
	if k == Semaphore {
		s, _ := v.Semaphore(name)
		return s.Waiters
	}
	l, _ := v.Lease(name)
	return l.Waiters
}

// Release ends the belief at once and delivers the release even when its
// context has already ended: the release goes on in the background until
// it commits.
func TestReleaseDeliveredAfterContextEnds(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			g := h.acquire(req(k, "x", true))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := g.Release(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Release under an ended context: %v, want context.Canceled", err)
			}
			if cause := context.Cause(g.Belief().Context()); !errors.Is(cause, errReleased) {
				t.Fatalf("belief after Release: %v, want errReleased at once", cause)
			}
			testkit.Eventually(t, "the release is delivered", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			if got := h.settled(k.label(opRelease)); got != 1 {
				t.Fatalf("settlements %q = %v, want 1", k.label(opRelease), got)
			}
			if err := g.Release(context.Background()); err != nil {
				t.Fatalf("second Release: %v, want nil", err)
			}
		})
	}
}

// A settlement whose release never gets an answer stops when its session
// ends (the session's end frees everything it held).
func TestSettlementEndsWithSession(t *testing.T) {
	h := newHarness(t)
	g := h.acquire(req(Lease, "x", true))
	h.setFault(func(cmd fsm.Command) fault {
		if isRelease(cmd) {
			return drop
		}
		return pass
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Release(ctx); err == nil {
		t.Fatal("Release under an ended context reported a delivered release")
	}
	testkit.Eventually(t, "the settlement retries", waitFor, func() error {
		if n := h.count(fsm.OpRelease); n < 2 {
			return fmt.Errorf("%d release attempts", n)
		}
		return nil
	})
	if n := h.part.settling.Load(); n != 1 {
		t.Fatalf("%d settlements in flight, want 1", n)
	}
	h.session().End(errShutdown)
	testkit.Eventually(t, "the settlement ends with its session", waitFor, func() error {
		if n := h.part.settling.Load(); n != 0 {
			return fmt.Errorf("%d settlements in flight", n)
		}
		return nil
	})
}
