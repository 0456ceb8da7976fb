package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

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
