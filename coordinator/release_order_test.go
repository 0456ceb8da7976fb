package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestReleaseIsOrdered: a Release (which returns once the release has
// committed) and a ReleaseBeforeCommit (which returns once raft on the
// leader has taken the release in, before it commits) must both come
// before everything that follows them, whether made on the leader or on a
// follower: the releasing node's next TryAcquire of the name is granted
// with a larger token, the other node's TryAcquire right after the release
// is granted (not refused as held), and a Sync on the other node right
// after it sees the name free (with no fault: the early release gives no
// such promise once its leader loses office).
func TestReleaseIsOrdered(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout).C()
	var follower *coordinator.Coordinator
	for _, n := range cl.Running() {
		if n.C() != leader {
			follower = n.C()
			break
		}
	}
	cl.WaitFor("a session on every node", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for _, early := range []bool{false, true} {
		release := (*coordinator.Lease).Release
		if early {
			release = (*coordinator.Lease).ReleaseBeforeCommit
		}
		t.Run(fmt.Sprintf("early=%v/on the leader", early), func(t *testing.T) { releaseOrdered(ctx, t, leader, follower, release) })
		t.Run(fmt.Sprintf("early=%v/on a follower", early), func(t *testing.T) { releaseOrdered(ctx, t, follower, leader, release) })
	}
}

// releaseOrdered acquires and releases "x" on c, then takes it at once on
// c (even rounds) or on other (odd rounds), checking that the release came
// first; each round's grant is released and, on even rounds, other's Sync
// must show the name free.
func releaseOrdered(ctx context.Context, t *testing.T, c, other *coordinator.Coordinator,
	release func(*coordinator.Lease, context.Context) error) {
	t.Helper()
	var last uint64
	for i := 0; i < 20; i++ {
		l, err := c.Acquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: acquire: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("round %d: token %d after %d", i, l.Token(), last)
		}
		if err := release(l, ctx); err != nil {
			t.Fatalf("round %d: release: %v", i, err)
		}
		if i%2 == 0 {
			// The node's own next acquire follows the release.
			l2, err := c.TryAcquire(ctx, "x")
			if err != nil {
				t.Fatalf("round %d: TryAcquire right after its own Release: %v", i, err)
			}
			last = l2.Token()
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("round %d: release: %v", i, err)
			}
			if err := other.Sync(ctx); err != nil {
				t.Fatalf("round %d: the other node's Sync: %v", i, err)
			}
			if h, held := other.Holder("x"); held {
				t.Fatalf("round %d: after the Release and the other node's Sync, %q is held by %+v", i, "x", h)
			}
			continue
		}
		fl, err := other.TryAcquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: the other node's TryAcquire right after the Release: %v", i, err)
		}
		last = fl.Token()
		if err := fl.Release(ctx); err != nil {
			t.Fatalf("round %d: the other node's release: %v", i, err)
		}
	}
}
