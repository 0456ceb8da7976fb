package coordinator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestReleaseLeaseWithoutItsHolder: an operator releases a lease whose
// holder's node is cut off: the leader commits the release without it
// (Graceful false, the message says what that means), another node then
// acquires the lease with a larger token, and the fence refuses the old
// holder's write once the new holder has written, although the old holder
// may still believe it holds the lease.
func TestReleaseLeaseWithoutItsHolder(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	var holder, other *holdfasttest.Node
	for _, n := range cl.Running() {
		switch {
		case n == leader:
		case holder == nil:
			holder = n
		default:
			other = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	old, err := holder.C().Acquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	mem := fence.NewMemory(fence.MemoryConfig{})
	cl.Isolate(holder.Index)
	res, err := other.C().Operate(ctx, coordinator.Operation{Action: coordinator.ActionReleaseLease, Target: "stuck", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Graceful || res.Token != old.Token() || res.Node.Name != holder.Name || res.Leader.Name != leader.Name {
		t.Fatalf("release without the holder's node: %+v", res)
	}
	t.Log(res.Message)
	l, err := other.C().Acquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= old.Token() {
		t.Fatalf("next grant token %d, not above the released %d", l.Token(), old.Token())
	}
	if err := mem.Do("stuck", l.Token(), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := mem.Do("stuck", old.Token(), func() error { return nil }); !errors.Is(err, fence.ErrFenced) {
		t.Errorf("the old holder's write after the release: %v, want ErrFenced", err)
	}
	_, err = other.C().Operate(ctx, coordinator.Operation{Action: "elect", Target: "x"})
	if !errors.Is(err, coordinator.ErrOperationRefused) {
		t.Errorf("an unknown action: %v", err)
	}
}
