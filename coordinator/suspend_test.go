package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestSuspendedHolderSeesLeaseEnded: a holder whose machine was suspended
// for longer than the TTL (its clock jumps, Go's timers do not) must see
// its lease and its shard leases ended the moment it resumes: Checkpoint
// fails at once and the contexts end.
func TestSuspendedHolderSeesLeaseEnded(t *testing.T) {
	t.Parallel()
	clk := testkit.NewJumpClock(coordinator.SystemClock())
	const holder = 1
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		if i == holder {
			c.Clock = clk
		}
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(holder).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "suspend")
	if err != nil {
		t.Fatal(err)
	}
	cl.WaitFor("the holder owns a shard", formTimeout, func() error {
		if len(c.Owned()) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	shards := c.Owned()
	if err := l.Checkpoint(); err != nil {
		t.Fatalf("fresh lease fails its checkpoint: %v", err)
	}
	clk.Advance(cl.Node(holder).Config.Session.TTL + time.Second)
	// No timer has fired yet: the checks must read the clock themselves.
	if err := l.Checkpoint(); !errors.Is(err, coordinator.ErrLeaseLost) {
		t.Fatalf("Checkpoint after a suspend longer than the TTL: %v, want ErrLeaseLost", err)
	}
	if r := l.Remaining(); r != 0 {
		t.Fatalf("Remaining after the suspend: %v", r)
	}
	if !errors.Is(l.Err(), coordinator.ErrSessionExpired) {
		t.Fatalf("lease ended with %v, want ErrSessionExpired", l.Err())
	}
	for _, s := range shards {
		if err := s.Checkpoint(); !errors.Is(err, coordinator.ErrLeaseLost) {
			t.Fatalf("shard %d: Checkpoint after the suspend: %v", s.Shard(), err)
		}
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the lease's context did not end")
	}
}

// TestSuspendedHolderContextEndsWithoutACall: after a suspend, the lease's
// context ends without any call to Checkpoint, Err or Remaining (the
// belief's timer reads the clock again on its own).
func TestSuspendedHolderContextEndsWithoutACall(t *testing.T) {
	t.Parallel()
	clk := testkit.NewJumpClock(coordinator.SystemClock())
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) { c.Clock = clk }})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "suspend")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(cl.Node(0).Config.Session.TTL + time.Second)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the lease's context did not end after the clock jumped past its session's deadline")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, coordinator.ErrSessionExpired) {
		t.Fatalf("ended with %v, want ErrSessionExpired", cause)
	}
}
