package coordinator_test

import (
	"context"
	"testing"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestReleaseOnLeaderIsOrdered: a Release on the raft leader returns once
// raft has taken the release in, before it commits. It must still come
// before everything that follows it: the leader's next Acquire of the name
// is granted with a larger token, a follower's TryAcquire right after the
// Release is granted (not refused as held), and a follower's Sync right
// after a Release sees the name free.
func TestReleaseOnLeaderIsOrdered(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout).C()
	var follower *holdfasttest.Node
	for _, n := range cl.Running() {
		if n.C() != leader {
			follower = n
			break
		}
	}
	f := follower.C()
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
	var last uint64
	for i := 0; i < 20; i++ {
		l, err := leader.Acquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: leader acquire: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("round %d: token %d after %d", i, l.Token(), last)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("round %d: leader release: %v", i, err)
		}
		if i%2 == 0 {
			// The leader's own next acquire follows the release.
			l2, err := leader.TryAcquire(ctx, "x")
			if err != nil {
				t.Fatalf("round %d: leader TryAcquire right after its Release: %v", i, err)
			}
			last = l2.Token()
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("round %d: leader release: %v", i, err)
			}
			if err := f.Sync(ctx); err != nil {
				t.Fatalf("round %d: follower sync: %v", i, err)
			}
			if h, held := f.Holder("x"); held {
				t.Fatalf("round %d: after the leader's Release and the follower's Sync, %q is held by %+v", i, "x", h)
			}
			continue
		}
		fl, err := f.TryAcquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: follower TryAcquire right after the leader's Release: %v", i, err)
		}
		last = fl.Token()
		if err := fl.Release(ctx); err != nil {
			t.Fatalf("round %d: follower release: %v", i, err)
		}
	}
}
