package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// Release's ordering and delivery: what follows a Release sees it, a
// returned Release stays visible after its leader loses office, and a
// release taken in by a leader that lost office reaches the next one.

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

// TestReturnedReleaseVisibleAfterLeaderLoss: once Release has returned,
// every node's Sync-then-Holder sees the name released, even when the
// leader that took the release in loses office right after. The leader
// holds the lease, is cut off from the other voters, and releases at once
// (it still believes it leads). Whenever Release returns, a Sync on the
// new leader must read the name free.
func TestReturnedReleaseVisibleAfterLeaderLoss(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := leader.C().Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	cl.Isolate(leader.Index)
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	var next *holdfasttest.Node
	cl.WaitFor("a new leader among the others", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n != leader && n.C().RaftState() == coordinator.StateLeader {
				next = n
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	select {
	case err := <-released:
		// Returned while the old leader was cut off: the others must see it.
		if err != nil {
			t.Fatalf("Release: %v", err)
		}
		checkReleased(ctx, t, next.C(), "r", "Release returned while its leader was cut off")
		cl.Heal()
	default:
		cl.Heal()
		if err := <-released; err != nil {
			t.Fatalf("Release: %v", err)
		}
		checkReleased(ctx, t, next.C(), "r", "Release returned after the heal")
	}
}

// checkReleased fails the test unless a Sync on c, then Holder, shows name
// free.
func checkReleased(ctx context.Context, t *testing.T, c *coordinator.Coordinator, name, when string) {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("%s: Sync on %s: %v", when, c.NodeName(), err)
	}
	if h, held := c.Holder(name); held {
		t.Fatalf("%s: %s's Sync then Holder still shows %q held by %+v", when, c.NodeName(), name, h)
	}
}

// waitSessions waits until every running node has a session.
func waitSessions(t *testing.T, cl *holdfasttest.Cluster) {
	t.Helper()
	cl.WaitFor("a session on every node", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return fmt.Errorf("%w: %s has no session", holdfasttest.ErrNotYet, n.Name)
			}
		}
		return nil
	})
}

// TestReleaseRedeliveredToNextLeader: a release a follower sent to a
// leader that took it in and then lost office reaches the next leader as
// soon as the follower learns of the change, without waiting out the
// attempt timeout (here RPCTimeout, made far longer than the test) or the
// caller's context. The old leader's traffic is delayed, so it takes the
// release in but cannot replicate it before the others elect a new leader;
// then it is cut off for good.
func TestReleaseRedeliveredToNextLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) {
			c.RPCTimeout, c.Cluster.BootstrapPromiseTTL = 5*time.Minute, 11*time.Minute
		}})
	leader := cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	a, b := followersOf(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := a.C().Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	late := time.Second
	cl.Net.SetDelay(leader.C().RPCAddr(), "", late, late)
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	cl.WaitFor("a new leader among the followers", formTimeout, func() error {
		for _, n := range []*holdfasttest.Node{a, b} {
			if n.C().RaftState() == coordinator.StateLeader {
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	cl.Isolate(leader.Index)
	cl.Net.SetDelay(leader.C().RPCAddr(), "", 0, 0)
	cl.WaitFor("the name free on the new leader's side", formTimeout, func() error {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		if err := b.C().Sync(sctx); err != nil {
			return fmt.Errorf("%w: Sync: %v", holdfasttest.ErrNotYet, err)
		}
		if h, held := b.C().Holder("r"); held {
			return fmt.Errorf("%w: held by %+v", holdfasttest.ErrNotYet, h)
		}
		return nil
	})
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release: %v", err)
		}
	case <-time.After(formTimeout):
		t.Fatal("Release has not returned although the next leader committed it")
	}
	cl.Heal()
}
