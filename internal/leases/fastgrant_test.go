package leases

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// An acquire the leader grants at once returns on the leader's answer, with
// the token the leader's commit minted, before the local replica (a
// follower's) has applied the grant. The watch loop leaves the grant alone
// while the replica is behind its index, and once the replica has caught up
// it ends the grant as soon as the replica shows another holder.
func TestGrantedOnLeadersAnswer(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			probe := h.acquire(req(k, "probe", true))
			h.lag()
			_, probeGone := h.commit(k.ReleaseCmd(probe.Name(), probe.SessionID(), probe.Request(), probe.Token()))

			g := h.acquire(req(k, "x", true)) // the old code waited here for the replica
			if v := h.fsm.View(); v.Index() >= g.index {
				t.Fatalf("the replica is at %d, the grant at %d: the harness did not lag", v.Index(), g.index)
			}
			if _, ok := k.granted(h.fsm.View(), "x", g.SessionID(), g.Request()); ok {
				t.Fatal("the lagging replica already shows the grant")
			}
			if token, ok := k.granted(h.lead.View(), "x", g.SessionID(), g.Request()); !ok || token != g.Token() {
				t.Fatalf("the leader shows token %d (ok %v), the grant has %d", token, ok, g.Token())
			}
			probe2 := h.acquire(req(k, "probe2", true))
			_, probe2Gone := h.commit(k.ReleaseCmd(probe2.Name(), probe2.SessionID(), probe2.Request(), probe2.Token()))

			// A view from before the grant's index: the probe's loss shows
			// the watch loop looked at it, and the grant must survive it.
			h.catchUpTo(probeGone)
			if cause := ended(t, probe); !errors.Is(cause, errLost) {
				t.Fatalf("probe ended with %v, want errLost", cause)
			}
			if err := g.Belief().Context().Err(); err != nil {
				t.Fatal("a replica behind the grant's index ended the grant")
			}
			// A view past the grant's index that shows it.
			h.catchUpTo(probe2Gone)
			if cause := ended(t, probe2); !errors.Is(cause, errLost) {
				t.Fatalf("probe2 ended with %v, want errLost", cause)
			}
			if err := g.Belief().Context().Err(); err != nil {
				t.Fatal("a replica that shows the grant ended it")
			}
			// The replica later shows another holder: the grant ends.
			h.other("o")
			h.commit(k.ReleaseCmd(g.Name(), g.SessionID(), g.Request(), g.Token()))
			r, _ := h.commit(k.acquireCmd(req(k, "x", true), "o", 1))
			if r.Err != nil || r.Queued {
				t.Fatalf("the other session's acquire: %+v", r)
			}
			if err := g.Belief().Context().Err(); err != nil {
				t.Fatal("the grant ended before the replica showed another holder")
			}
			h.catchUp()
			if cause := ended(t, g); !errors.Is(cause, errLost) {
				t.Fatalf("grant ended with %v, want errLost", cause)
			}
			if n := h.count(fsm.OpRelease) + h.count(fsm.OpSemRelease); n != 0 {
				t.Fatalf("the part proposed %d releases (settlements) of its own", n)
			}
		})
	}
}

// A queued request on a lagging follower takes its grant from the leader's
// answer (ServeWait on the leader's replica) as soon as the release that
// grants it is applied there, before its own replica hears of it; the grant
// then lives on as any other once the replica catches up.
func TestQueuedRequestTakesTheLeadersAnswer(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			leader := New(Options{View: h.lead.View})
			t.Cleanup(leader.Close)
			h.mu.Lock()
			h.ask = leader.ServeWait
			h.mu.Unlock()
			h.other("o")
			held := k.acquireCmd(req(k, "x", true), "o", 1)
			if k == Semaphore {
				held.Sem.Limit = 1
			}
			if r, _ := h.commit(held); r.Err != nil || r.Queued {
				t.Fatalf("the other session's acquire: %+v", r)
			}
			h.lag()
			got := make(chan *Grant, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				defer cancel()
				r := req(k, "x", true)
				r.Limit = 1
				g, err := h.part.Acquire(ctx, r)
				if err != nil {
					t.Errorf("acquire: %v", err)
				}
				got <- g
			}()
			testkit.Eventually(t, "the request queued on the leader", waitFor, func() error {
				v := h.lead.View()
				if l, ok := v.Lease("x"); ok && len(l.Waiters) == 1 {
					return nil
				}
				if s, ok := v.Semaphore("x"); ok && len(s.Waiters) == 1 {
					return nil
				}
				return errors.New("not queued yet")
			})
			h.commit(k.ReleaseCmd("x", "o", 1, 0)) // grants the queued request, on the leader
			g := <-got
			if g == nil {
				return
			}
			if v := h.fsm.View(); v.Index() >= g.index {
				t.Fatalf("the replica is at %d, the grant at %d: the grant did not come from the leader", v.Index(), g.index)
			}
			if token, ok := k.granted(h.lead.View(), "x", g.SessionID(), g.Request()); !ok || token != g.Token() {
				t.Fatalf("the leader shows token %d (ok %v), the grant has %d", token, ok, g.Token())
			}
			h.catchUp()
			if err := g.Release(context.Background()); err != nil {
				t.Fatalf("release: %v", err)
			}
			if cause := ended(t, g); !errors.Is(cause, errReleased) {
				t.Fatalf("grant ended with %v, want errReleased", cause)
			}
		})
	}
}

// ServeWait answers "not granted" once the asker's wait has passed.
func TestServeWaitAnswersNotGrantedAfterTheWait(t *testing.T) {
	h := newHarness(t)
	rep, err := h.part.ServeWait(context.Background(), wire.WaitGrantRequest{Name: "x", Session: "s1", Request: 7, WaitNanos: int64(time.Millisecond)})
	if err != nil || rep.Granted {
		t.Fatalf("ServeWait for a request nobody granted: %+v, %v", rep, err)
	}
}
