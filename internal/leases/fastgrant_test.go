package leases

import (
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
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
