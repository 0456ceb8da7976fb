package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

func TestCampaignResignHandsOver(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	la, err := a.Campaign(ctx, "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Checkpoint(); err != nil {
		t.Fatalf("fresh lease fails its checkpoint: %v", err)
	}
	if _, err := b.TryAcquire(ctx, "scheduler"); !errors.Is(err, coordinator.ErrLeaseHeld) {
		t.Fatalf("TryAcquire of a held lease: %v", err)
	}
	got := make(chan *coordinator.Lease, 1)
	go func() {
		lb, err := b.Campaign(ctx, "scheduler")
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	cl.WaitFor("b queued", formTimeout, func() error {
		h, ok := b.LeaseHolder("scheduler")
		if !ok || h.Token != la.Token() || h.Node != a.NodeName() {
			return fmt.Errorf("%w: holder %+v", holdfasttest.ErrNotYet, h)
		}
		return nil
	})
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(la.Err(), coordinator.ErrResigned) {
		t.Fatalf("resigned lease ends with %v", la.Err())
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token went from %d to %d", la.Token(), lb.Token())
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPausedHolderLosesLeaseFirst(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	var holderNode, waiterNode *holdfasttest.Node
	for _, n := range cl.Running() {
		if n == leader {
			continue
		}
		if holderNode == nil {
			holderNode = n
		} else {
			waiterNode = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l1, err := holderNode.C().Campaign(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan time.Time, 1)
	var l2 *coordinator.Lease
	go func() {
		var err error
		l2, err = waiterNode.C().Campaign(ctx, "job")
		if err != nil {
			t.Error(err)
		}
		granted <- time.Now()
	}()
	lost := make(chan time.Time, 1)
	go func() {
		<-l1.Done()
		lost <- time.Now()
	}()
	cl.Pause(holderNode.Index)
	tLost, tGranted := <-lost, <-granted
	if l2 == nil {
		t.FailNow()
	}
	if !tLost.Before(tGranted) {
		t.Fatalf("holder believed until %v, next holder granted at %v", tLost, tGranted)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d after %d", l2.Token(), l1.Token())
	}
	t.Logf("holder gave up %v before the next grant", tGranted.Sub(tLost))
	cl.Resume(holderNode.Index)
}
