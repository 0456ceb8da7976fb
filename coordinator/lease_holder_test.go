package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// What a lease's holder shows: TestHolderShape (one Holder for a lease, a
// semaphore permit and a shard) and testHolderValue (the holder's value; run
// by TestOnOneCluster).

// TestHolderShape: a lease, a semaphore permit and a shard held by one node
// are described by the same Holder, with the node's name, identity, service
// address and session, and each grant's own token.
func TestHolderShape(t *testing.T) {
	t.Parallel()
	const addr = "svc.example:8080"
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) {
		c.ServiceAddr = addr
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.AcquireSemaphore(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	sess, ok := c.Session()
	if !ok {
		t.Fatal("no session")
	}
	want := func(token uint64) coordinator.Holder {
		return coordinator.Holder{Node: coordinator.Node{Name: c.NodeName(), ID: c.ID()}, Addr: addr, Session: sess.ID, Token: token}
	}
	check := func(what string, got, want coordinator.Holder) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	h, _ := c.Holder("l")
	check("Holder", h, want(l.Token()))
	if ls := c.Leases(); len(ls) != 1 || ls[0].Name != "l" {
		t.Errorf("Leases: %+v", ls)
	} else {
		check("Leases", ls[0].Holder, want(l.Token()))
	}
	if hs := c.Semaphore("s"); len(hs) != 1 {
		t.Errorf("Semaphore: %+v", hs)
	} else {
		check("Semaphore", hs[0], want(p.Token()))
	}
	cl.WaitFor("a shard owned", formTimeout, func() error {
		if len(c.Owned()) == 0 {
			return fmt.Errorf("%w: no shard", holdfasttest.ErrNotYet)
		}
		return nil
	})
	sl := c.Owned()[0]
	o, _ := c.Owner(sl.Shard())
	check("Owner", o, want(sl.Token()))
	info, _ := c.Table().Shard(sl.Shard())
	check("ShardInfo.Owner", info.Owner, want(sl.Token()))
}

// testHolderValue: a holder value given to Acquire is shown with the
// holder on every node (Holder after Sync, Observe, Leases); SetValue
// changes it under the same token; a waiter's value comes with its grant;
// RunElection's Value reaches the other nodes' OnNewLeader; bad values and
// a released lease are refused with errors that say so.
func testHolderValue(t *testing.T, cl *holdfasttest.Cluster) {
	cl.WaitFormed(formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()

	l := holderValueShown(ctx, t, a, b)
	holderValueRefusesBad(ctx, t, b, l)
	holderValueOfWaiter(ctx, t, cl, a, b, l)
	holderValueOfElection(ctx, t, cl, a, b)
}

// holderValueShown acquires "svc" on a with a value and checks that b
// shows it (Holder after Sync, WatchHolder, Leases) with a's token, before
// and after a SetValue, which keeps the token. It returns a's lease.
func holderValueShown(ctx context.Context, t *testing.T, a, b *coordinator.Coordinator) *coordinator.Lease {
	l, err := a.Acquire(ctx, "svc", coordinator.WithValue("10.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	obs := b.WatchHolder(ctx, "svc")
	if h := syncedHolder(ctx, t, b); h.Value != "10.0.0.1:8080" || h.Token != l.Token() || l.Value() != "10.0.0.1:8080" {
		t.Fatalf("holder on another node %+v, lease value %q", h, l.Value())
	}
	waitObservedValue(ctx, t, obs, l, "10.0.0.1:8080")
	if err := l.SetValue(ctx, "10.0.0.1:9090"); err != nil {
		t.Fatal(err)
	}
	waitObservedValue(ctx, t, obs, l, "10.0.0.1:9090")
	if h := syncedHolder(ctx, t, b); h.Value != "10.0.0.1:9090" || h.Token != l.Token() {
		t.Fatalf("after SetValue: %+v", h)
	}
	if li, ok := leaseInfo(b, "svc"); !ok || li.Holder.Value != "10.0.0.1:9090" {
		t.Fatalf("Leases: %+v", b.Leases())
	}
	return l
}

// syncedHolder returns the holder of "svc" that c shows after a Sync.
func syncedHolder(ctx context.Context, t *testing.T, c *coordinator.Coordinator) coordinator.Holder {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := c.Holder("svc")
	return h
}

// waitObservedValue reads obs until a holder with value want comes, which
// must have l's token; it fails the test if ctx ends first.
func waitObservedValue(ctx context.Context, t *testing.T, obs <-chan coordinator.Holder, l *coordinator.Lease, want string) {
	t.Helper()
	for {
		select {
		case h := <-obs:
			if h.Value == want {
				if h.Token != l.Token() {
					t.Fatalf("observed %+v: the value changed the token", h)
				}
				return
			}
		case <-ctx.Done():
			t.Fatalf("Observe never showed value %q", want)
		}
	}
}

// holderValueRefusesBad checks that a value too long or not UTF-8 is
// refused with ErrInvalidValue, by TryAcquire on b and by l's SetValue.
func holderValueRefusesBad(ctx context.Context, t *testing.T, b *coordinator.Coordinator, l *coordinator.Lease) {
	for _, bad := range []string{strings.Repeat("x", coordinator.MaxValueLength+1), "\xff"} {
		if _, err := b.TryAcquire(ctx, "other", coordinator.WithValue(bad)); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("WithValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
		if err := l.SetValue(ctx, bad); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("SetValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
	}
}

// holderValueOfWaiter queues b for "svc" with a value of its own, releases
// a's lease l (whose SetValue is then refused with ErrReleased), and checks
// that b's grant shows b's value, on a too; then it releases b's lease.
func holderValueOfWaiter(ctx context.Context, t *testing.T, cl *holdfasttest.Cluster, a, b *coordinator.Coordinator, l *coordinator.Lease) {
	waited := make(chan *coordinator.Lease, 1)
	go func() {
		bl, err := b.Acquire(ctx, "svc", coordinator.WithValue("waiter b"))
		if err != nil {
			t.Error(err)
		}
		waited <- bl
	}()
	cl.WaitFor("b queued for svc", formTimeout, func() error {
		if li, ok := leaseInfo(a, "svc"); !ok || li.Waiters != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.SetValue(ctx, "too late"); !errors.Is(err, coordinator.ErrReleased) {
		t.Errorf("SetValue after Release: %v, want ErrReleased", err)
	}
	bl := <-waited
	if bl == nil {
		t.FailNow()
	}
	if h := syncedHolder(ctx, t, a); h.Node.Name != cl.Node(1).Name || h.Value != "waiter b" || bl.Value() != "waiter b" {
		t.Fatalf("the waiter's grant: %+v", h)
	}
	if err := bl.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// holderValueOfElection: an election publishes where its leader serves:
// once a leads "elected" with a Value, b, campaigning too, sees a and that
// value in its OnNewLeader. Both campaigns have ended when it returns.
func holderValueOfElection(ctx context.Context, t *testing.T, cl *holdfasttest.Cluster, a, b *coordinator.Coordinator) {
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{}, 2)
	started := make(chan struct{}, 1)
	go func() {
		a.RunElection(ectx, coordinator.ElectionConfig{Name: "elected", Value: "a serves at :8080",
			OnStartedLeading: func(ctx context.Context, _ *coordinator.Lease) { started <- struct{}{}; <-ctx.Done() }})
		done <- struct{}{}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("a never led")
	}
	leaders := make(chan coordinator.Holder, 16)
	go func() {
		b.RunElection(ectx, coordinator.ElectionConfig{Name: "elected", Value: "b",
			OnStartedLeading: func(ctx context.Context, _ *coordinator.Lease) { <-ctx.Done() },
			OnNewLeader:      func(h coordinator.Holder) { leaders <- h }})
		done <- struct{}{}
	}()
	select {
	case h := <-leaders:
		if h.Node.Name != cl.Node(0).Name || h.Value != "a serves at :8080" {
			t.Errorf("b's OnNewLeader: %+v, want a with its value", h)
		}
	case <-ctx.Done():
		t.Fatal("b's OnNewLeader never called")
	}
	stop()
	<-done
	<-done
}
