package coordinator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestErrorsNameThePackageOnce checks the messages users see of errors
// that wrap other holdfast errors: a lost lease's Checkpoint, and Ready
// after Shutdown. Each says "holdfast:" once and still matches both
// sentinels.
func TestErrorsNameThePackageOnce(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, want string, is ...error) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", what, err, want)
			return
		}
		if n := strings.Count(err.Error(), "holdfast:"); n != 1 {
			t.Errorf("%s: %q names the package %d times", what, err, n)
		}
		for _, target := range is {
			if !errors.Is(err, target) {
				t.Errorf("%s: %q does not match %q", what, err, target)
			}
		}
	}
	// Released by this node, not lost.
	check("Checkpoint after Release", l.Checkpoint(), "holdfast: lease released by this node", coordinator.ErrReleased)
	if errors.Is(l.Checkpoint(), coordinator.ErrLeaseLost) {
		t.Errorf("Checkpoint after this node's own Release matches ErrLeaseLost: %v", l.Checkpoint())
	}

	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	check("Ready after Shutdown", c.Ready(), "holdfast: not ready: coordinator is shut down",
		coordinator.ErrNotReady, coordinator.ErrShutdown)
}
