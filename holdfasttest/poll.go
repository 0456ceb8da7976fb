package holdfasttest

import (
	"errors"
	"time"
)

// ErrNotYet is what a condition passed to WaitFor returns (wrapped or not)
// while it does not hold yet.
var ErrNotYet = errors.New("not yet")

// WaitFor polls cond every few milliseconds until it returns nil, and fails
// the test with cond's last error once timeout has passed.
func (cl *Cluster) WaitFor(what string, timeout time.Duration, cond func() error) {
	cl.t.Helper()
	if err := Poll(timeout, cond); err != nil {
		cl.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Poll calls cond until it returns nil or timeout passes; it returns cond's
// last error then.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}
