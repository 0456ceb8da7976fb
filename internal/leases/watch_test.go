package leases

import (
	"errors"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// A grant the replica no longer shows ends this node's belief with the
// lost cause: released behind the holder's back (a late settlement, another
// replica's view), or freed with its session.
func TestLostInReplicaEndsBelief(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String()+"/released", func(t *testing.T) {
			h := newHarness(t)
			g := h.acquire(req(k, "x", true))
			other := h.acquire(req(k, "y", true))
			h.commit(k.ReleaseCmd(g.Name(), g.SessionID(), g.Request(), g.Token()))
			if cause := ended(t, g); !errors.Is(cause, errLost) {
				t.Fatalf("belief ended with %v, want errLost", cause)
			}
			if err := other.Belief().Context().Err(); err != nil {
				t.Fatalf("a grant the replica still shows ended: %v", err)
			}
			testkit.Eventually(t, "the lost grant is forgotten", waitFor, func() error {
				if n := h.part.Held(k); n != 1 {
					return fmt.Errorf("Held = %d, want 1", n)
				}
				return nil
			})
		})
		t.Run(k.String()+"/session-closed", func(t *testing.T) {
			h := newHarness(t)
			g := h.acquire(req(k, "x", true))
			h.commit(fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: g.SessionID()}})
			if cause := ended(t, g); !errors.Is(cause, errLost) {
				t.Fatalf("belief ended with %v, want errLost", cause)
			}
		})
	}
}
