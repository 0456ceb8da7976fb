package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// holds reports whether c's replica shows name held.
func holds(c *coordinator.Coordinator, name string) bool {
	for _, l := range c.Leases() {
		if l.Name == name {
			return true
		}
	}
	return false
}

// TestSync checks that Sync on a follower returns only once its replica
// shows a write the leader committed before the call: at once on a
// healthy follower, never while the follower is cut off (it fails when
// its context ends, and reports since when it has known no leader), and
// after the partition heals.
func TestSync(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	f := cl.Node((leader.Index + 1) % 3)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()

	if _, err := leader.C().TryAcquire(ctx, "before-sync"); err != nil {
		t.Fatal(err)
	}
	if err := f.C().Sync(ctx); err != nil {
		t.Fatalf("Sync on a healthy follower: %v", err)
	}
	if !holds(f.C(), "before-sync") {
		t.Fatalf("after Sync, %s's replica does not show a lease committed before it", f.Name)
	}

	cl.Isolate(f.Index)
	if _, err := leader.C().TryAcquire(ctx, "while-cut-off"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	err := f.C().Sync(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync on a cut-off follower: %v, want it to wait until its context ends", err)
	}
	cl.WaitFor(f.Name+" to know no leader", formTimeout, func() error {
		if since, ok := f.C().NoLeaderSince(); !ok || since.IsZero() {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	t.Logf("cut-off follower's Sync: %v", err)

	cl.Heal()
	if err := f.C().Sync(ctx); err != nil {
		t.Fatalf("Sync after the partition healed: %v", err)
	}
	if !holds(f.C(), "while-cut-off") {
		t.Fatalf("after Sync, %s's replica does not show the lease committed while it was cut off", f.Name)
	}
	if _, ok := f.C().NoLeaderSince(); ok {
		t.Errorf("%s knows no leader after a successful Sync", f.Name)
	}
}

// TestSyncOnCutOffLeader cuts the leader off: while it still believes it
// leads, and after, its Sync must not return, since the majority may have
// committed writes it has not seen.
func TestSyncOnCutOffLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	old := cl.WaitFormed(formTimeout)
	cl.Isolate(old.Index)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := old.C().Sync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync on a cut-off leader: %v, want it to wait until its context ends", err)
	}
}
