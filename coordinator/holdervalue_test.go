package coordinator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestHolderValue: a holder value given to Acquire is shown with the
// holder on every node (Holder after Sync, Observe, Leases); SetValue
// changes it under the same token; a waiter's value comes with its grant;
// RunElection's Value reaches the other nodes' OnNewLeader; bad values and
// a released lease are refused with errors that say so.
func TestHolderValue(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	cl.WaitFormed(formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()

	l, err := a.Acquire(ctx, "svc", coordinator.WithValue("10.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	obs := b.WatchHolder(ctx, "svc")
	readOn := func(c *coordinator.Coordinator) coordinator.Holder {
		t.Helper()
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		h, _ := c.Holder("svc")
		return h
	}
	if h := readOn(b); h.Value != "10.0.0.1:8080" || h.Token != l.Token() || l.Value() != "10.0.0.1:8080" {
		t.Fatalf("holder on another node %+v, lease value %q", h, l.Value())
	}
	waitValue := func(want string) {
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
	waitValue("10.0.0.1:8080")
	if err := l.SetValue(ctx, "10.0.0.1:9090"); err != nil {
		t.Fatal(err)
	}
	waitValue("10.0.0.1:9090")
	if h := readOn(b); h.Value != "10.0.0.1:9090" || h.Token != l.Token() {
		t.Fatalf("after SetValue: %+v", h)
	}
	if ls := b.Leases(); len(ls) != 1 || ls[0].Holder.Value != "10.0.0.1:9090" {
		t.Fatalf("Leases: %+v", ls)
	}

	for _, bad := range []string{strings.Repeat("x", coordinator.MaxValueLength+1), "\xff"} {
		if _, err := b.TryAcquire(ctx, "other", coordinator.WithValue(bad)); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("WithValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
		if err := l.SetValue(ctx, bad); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("SetValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
	}

	waited := make(chan *coordinator.Lease, 1)
	go func() {
		bl, err := b.Acquire(ctx, "svc", coordinator.WithValue("waiter b"))
		if err != nil {
			t.Error(err)
		}
		waited <- bl
	}()
	cl.WaitFor("b queued for svc", formTimeout, func() error {
		if ls := a.Leases(); len(ls) != 1 || ls[0].Waiters != 1 {
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
	if h := readOn(a); h.Node != cl.Node(1).Name || h.Value != "waiter b" || bl.Value() != "waiter b" {
		t.Fatalf("the waiter's grant: %+v", h)
	}
	if err := bl.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// An election publishes where its leader serves: another candidate's
	// OnNewLeader sees it.
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
		if h.Node != cl.Node(0).Name || h.Value != "a serves at :8080" {
			t.Errorf("b's OnNewLeader: %+v, want a with its value", h)
		}
	case <-ctx.Done():
		t.Fatal("b's OnNewLeader never called")
	}
	stop()
	<-done
	<-done
}
