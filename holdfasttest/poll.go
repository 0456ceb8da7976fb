package holdfasttest

import (
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// ErrNotYet is what a condition passed to WaitFor returns (wrapped or not)
// while it does not hold yet.
var ErrNotYet = testkit.ErrNotYet

// WaitFor polls cond (every 1 to 100 ms) until it returns nil, and fails
// the test with cond's last error once timeout has passed.
func (cl *Cluster) WaitFor(what string, timeout time.Duration, cond func() error) {
	cl.t.Helper()
	if err := Poll(timeout, cond); err != nil {
		cl.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Poll calls cond until it returns nil or timeout passes; it returns cond's
// last error then.
func Poll(timeout time.Duration, cond func() error) error { return testkit.Poll(timeout, cond) }
