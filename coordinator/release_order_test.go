package coordinator_test

import (
	"context"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestReleaseIsOrdered: a Release returns once raft on the leader has
// taken the release in, before it commits. It must still come before
// everything that follows it, whether it was made on the leader or on a
// follower: the releasing node's next TryAcquire of the name is granted
// with a larger token, the other node's TryAcquire right after the Release
// is granted (not refused as held), and a Sync on the other node right
// after the Release sees the name free.
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
	t.Run("on the leader", func(t *testing.T) { releaseOrdered(ctx, t, leader, follower) })
	t.Run("on a follower", func(t *testing.T) { releaseOrdered(ctx, t, follower, leader) })
}

// releaseOrdered acquires and releases "x" on c, then takes it at once on
// c (even rounds) or on other (odd rounds), checking that the release came
// first; each round's grant is released and, on even rounds, other's Sync
// must show the name free.
func releaseOrdered(ctx context.Context, t *testing.T, c, other *coordinator.Coordinator) {
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
		if err := l.Release(ctx); err != nil {
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
