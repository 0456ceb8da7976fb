package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// These tests pin down how a lease request ends when its caller gives up:
// whatever reached the leader before the caller's context ended, nothing
// of it may outlive the call by more than a round trip once the node
// reaches the leader again.

// followersOf returns the two running nodes other than leader, each with a
// session.
func followersOf(t *testing.T, cl *holdfasttest.Cluster, leader *holdfasttest.Node) (a, b *holdfasttest.Node) {
	t.Helper()
	var fs []*holdfasttest.Node
	for _, n := range cl.Running() {
		if n != leader {
			fs = append(fs, n)
		}
	}
	if len(fs) < 2 {
		t.Fatalf("want two followers, have %d", len(fs))
	}
	for _, n := range append(fs, leader) {
		c := n.C()
		cl.WaitFor(n.Name+" has a session", formTimeout, func() error {
			if c.SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
			return nil
		})
	}
	return fs[0], fs[1]
}

// lateAnswers makes every answer from leader to n arrive d late (requests
// from n reach the leader at once) until the returned func is called.
func lateAnswers(cl *holdfasttest.Cluster, leader, n *holdfasttest.Node, d time.Duration) func() {
	from, to := leader.C().RPCAddr(), n.C().RPCAddr()
	cl.Net.SetDelay(from, to, d, d)
	return func() { cl.Net.SetDelay(from, to, 0, 0) }
}

// acquiredWithin polls TryAcquire of name on c until it succeeds (the lease
// is then released) or timeout passes.
func acquiredWithin(c *coordinator.Coordinator, name string, timeout time.Duration) error {
	var last error
	err := holdfasttest.Poll(timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, err := c.TryAcquire(ctx, name)
		if err != nil {
			last = err
			return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, err)
		}
		_ = l.Release(ctx)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// testCancelledTryAcquireOnLeaderLeavesNoOrphanGrant: a TryAcquire on the
// leader whose context is already cancelled must not leave its session
// holding the name.
func testCancelledTryAcquireOnLeaderLeavesNoOrphanGrant(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	other, _ := followersOf(t, cl, leader)
	waitReady(t, leader) // without a session TryAcquire fails anyway, and the test would show nothing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := leader.C().TryAcquire(ctx, "orphan-cancelled"); err == nil {
		t.Fatal("TryAcquire with a cancelled context succeeded")
	}
	ttl := leader.Config.Session.TTL
	if err := acquiredWithin(other.C(), "orphan-cancelled", 3*ttl); err != nil {
		h, _ := leader.C().Holder("orphan-cancelled")
		t.Fatalf("another node could not take the lease within 3 × TTL after a cancelled TryAcquire: %v; holder %+v (leader's session %s)",
			err, h, leader.C().SessionID())
	}
}

// testTimedOutForwardedTryAcquireLeavesNoOrphanGrant: a TryAcquire
// forwarded by a follower whose answer arrives after the caller's deadline
// (the leader committed it) must not leave the follower holding the name.
func testTimedOutForwardedTryAcquireLeavesNoOrphanGrant(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f, other := followersOf(t, cl, leader)
	waitReady(t, f) // without a session TryAcquire fails anyway, and the test would show nothing
	heal := lateAnswers(cl, leader, f, 700*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := f.C().TryAcquire(ctx, "orphan-forwarded")
	cancel()
	heal()
	if err == nil {
		t.Fatal("TryAcquire succeeded although its answer was delayed past its deadline")
	}
	t.Logf("TryAcquire: %v", err)
	ttl := leader.Config.Session.TTL
	if err := acquiredWithin(other.C(), "orphan-forwarded", 3*ttl); err != nil {
		h, _ := leader.C().Holder("orphan-forwarded")
		t.Fatalf("another node could not take the lease within 3 × TTL after a timed-out TryAcquire: %v; holder %+v (follower's session %s)",
			err, h, f.C().SessionID())
	}
}

// testAcquireNotBlockedBehindOrphanedQueueEntry: an Acquire that timed
// out after the leader queued it leaves a queue entry behind; a later
// Acquire on the same node must get the lease when it comes to the node,
// not wait for ever while its own session holds it.
func testAcquireNotBlockedBehindOrphanedQueueEntry(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f, other := followersOf(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	held, err := other.C().Acquire(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	heal := lateAnswers(cl, leader, f, 700*time.Millisecond)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = f.C().Acquire(short, "q")
	cancelShort()
	heal()
	if err == nil {
		t.Fatal("Acquire of a held lease succeeded")
	}
	t.Logf("first Acquire: %v", err)
	ttl := leader.Config.Session.TTL
	sid := f.C().SessionID()
	queuedFor := func() (uint64, bool) {
		for _, w := range leader.C().LeaseWaiters("q") {
			if w.Session == sid {
				return w.Request, true
			}
		}
		return 0, false
	}
	orphan, queued := queuedFor()
	t.Logf("after the first Acquire: queued %v (request %d)", queued, orphan)
	got := make(chan error, 1)
	go func() {
		l, err := f.C().Acquire(ctx, "q")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	// The lease must come to the second Acquire's request, not to the
	// first one's: wait until the queue shows that request for the node.
	if err := holdfasttest.Poll(3*ttl, func() error {
		if r, ok := queuedFor(); !ok || r == orphan {
			return fmt.Errorf("%w: queued %v for request %d", holdfasttest.ErrNotYet, ok, r)
		}
		return nil
	}); err != nil {
		t.Fatalf("the second Acquire never took the place of the first one's queue entry (request %d) in 3 × TTL: %v", orphan, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * ttl):
		h, _ := f.C().Holder("q")
		t.Fatalf("the second Acquire is still blocked 3 × TTL after the lease was released; holder %+v (its own session %s)",
			h, f.C().SessionID())
	}
}

// testReleaseWithCancelledContextReleasesOnFollower: Release ends the local
// belief at once and must still deliver the release when its context is
// already cancelled.
func testReleaseWithCancelledContextReleasesOnFollower(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f, other := followersOf(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := f.C().Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	err = l.Release(done)
	t.Logf("Release with a cancelled context: %v", err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Release with a cancelled context returned %v, want an error wrapping context.Canceled", err)
	}
	if !errors.Is(l.Err(), coordinator.ErrReleased) {
		t.Fatalf("the local belief did not end at Release: %v", l.Err())
	}
	ttl := leader.Config.Session.TTL
	if err := acquiredWithin(other.C(), "r", 3*ttl); err != nil {
		h, _ := leader.C().Holder("r")
		t.Fatalf("the release never reached the cluster: %v; holder %+v", err, h)
	}
}

// TestForwardedCommandPastItsBudgetIsDropped: a command forwarded with a
// budget that has run out is not proposed, and the drop is counted.
func TestForwardedCommandPastItsBudgetIsDropped(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) { c.Registerer = reg }})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	cl.WaitFor("a session", formTimeout, func() error {
		if c.SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	forward := func(req uint64, budget time.Duration) error {
		data, err := fsm.Encode(fsm.Command{Op: fsm.OpAcquire, Lease: &fsm.LeaseCmd{Name: "budget", Session: c.SessionID(), Request: req}})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Call(ctx, c.RPCAddr(), "raft.apply", map[string]any{"data": data, "budget": int64(budget)}, nil)
	}
	if err := forward(1<<40, time.Nanosecond); err == nil {
		t.Fatal("a forwarded command whose budget had run out was applied")
	}
	if h, ok := c.Holder("budget"); ok {
		t.Fatalf("the dropped command took the lease: %+v", h)
	}
	if got := metricSum(t, reg, "holdfast_forwards_expired_total"); got != 1 {
		t.Fatalf("holdfast_forwards_expired_total = %v, want 1", got)
	}
	if err := forward(1<<40+1, formTimeout); err != nil {
		t.Fatalf("a forwarded command within its budget: %v", err)
	}
	if _, ok := c.Holder("budget"); !ok {
		t.Fatal("the command within its budget did not take the lease")
	}
}

// testLateCopiesOfGivenUpRequestsChangeNothing: every command a follower
// forwards reaches the leader twice, the copy a second late: the copy of
// a leave must not end the node's later grant, and the copy of a given-up
// acquire must not queue or grant it again.
func testLateCopiesOfGivenUpRequestsChangeNothing(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f, other := followersOf(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	held, err := other.C().Acquire(ctx, "dup")
	if err != nil {
		t.Fatal(err)
	}
	var dups atomic.Int64
	f.C().SetForwardDuplicator(func() (time.Duration, bool) {
		dups.Add(1)
		return time.Second, true
	})
	defer f.C().SetForwardDuplicator(nil)
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := f.C().Acquire(short, "dup"); err == nil {
		t.Fatal("Acquire of a held lease succeeded")
	}
	cancelShort()
	got := make(chan *coordinator.Lease, 1)
	go func() {
		l, err := f.C().Acquire(ctx, "dup")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	sid := f.C().SessionID()
	cl.WaitFor("the second Acquire queued", formTimeout, func() error {
		for _, w := range leader.C().LeaseWaiters("dup") {
			if w.Session == sid {
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	// Wait until every copy sent so far has been delivered and answered.
	cl.WaitFor("the late copies delivered", formTimeout, func() error {
		if f.C().DuplicatesSent() < dups.Load() {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	t.Logf("%d forwarded commands sent twice", dups.Load())
	if err := l.Checkpoint(); err != nil {
		t.Fatalf("a late copy ended the node's later grant: %v", err)
	}
	if h, ok := leader.C().Holder("dup"); !ok || h.Session != sid || h.Token != l.Token() {
		t.Fatalf("after the late copies the leader shows %+v (ok %v), want the node's grant %d", h, ok, l.Token())
	}
	if n := len(leader.C().LeaseWaiters("dup")); n != 0 {
		t.Fatalf("a late copy queued the node again: %+v", leader.C().LeaseWaiters("dup"))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until n is Ready: formed, a leader known, a session held.
func waitReady(t *testing.T, n *holdfasttest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := n.C().WaitReady(ctx); err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
}
