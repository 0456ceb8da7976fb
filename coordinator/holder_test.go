package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestHolderShape: a lease, a semaphore permit and a shard held by one node
// are described by the same Holder, with the node's name, identity, service
// address and session, and each grant's own token.
func TestHolderShape(t *testing.T) {
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
		return coordinator.Holder{Node: c.NodeName(), NodeID: c.ID(), Addr: addr, Session: sess.ID, Token: token}
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
