package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// TestTryAcquireWithoutSession: on a node that has no session (alone,
// waiting for two more nodes to form a cluster), TryAcquire and
// TryAcquireSemaphore return at once with Ready's reason, wrapping
// ErrNotReady, instead of waiting for a session until their context ends
// (they used to block and return a bare "context deadline exceeded").
func TestTryAcquireWithoutSession(t *testing.T) {
	t.Parallel()
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "alone"
	cfg.DataDir = t.TempDir()
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // far beyond the test: it must not be what ends the call
	defer cancel()
	_, err = c.TryAcquire(ctx, "x")
	if !errors.Is(err, coordinator.ErrNotReady) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire without a session: %v, want ErrNotReady at once", err)
	}
	want := "holdfast: not ready: not a member of a formed cluster yet (bootstrap: 1 of 3 eligible nodes seen (alone)): TryAcquire does not wait for a session"
	if err.Error() != want {
		t.Errorf("TryAcquire error %q,\nwant %q", err, want)
	}
	_, err = c.TryAcquireSemaphore(ctx, "s", 2)
	if !errors.Is(err, coordinator.ErrNotReady) {
		t.Fatalf("TryAcquireSemaphore without a session: %v, want ErrNotReady", err)
	}
}
