package testkit

import (
	"errors"
	"testing"
	"time"
)

// ErrNotYet is what a condition returns (wrapped or not) while it does not
// hold yet; Holds returns it for a false condition.
var ErrNotYet = errors.New("not yet")

// maxPause bounds the pause between two calls of a condition: a cluster
// test's condition may scan every shard of every node, and polling it more
// often takes the CPU the nodes' keepalives need on a loaded machine.
const maxPause = 100 * time.Millisecond

// Poll calls cond until it returns nil or timeout passes, pausing between
// calls (1 ms at first, doubling up to 100 ms: a poll interval, not a
// synchronisation); it returns cond's last error then. cond is called at
// least once.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}

// Eventually polls cond (as Poll does) and fails tb, naming what it waited
// for and cond's last error, unless cond returns nil within timeout.
func Eventually(tb testing.TB, what string, timeout time.Duration, cond func() error) {
	tb.Helper()
	if err := Poll(timeout, cond); err != nil {
		tb.Fatalf("waiting for %s: not within %v: %v", what, timeout, err)
	}
}

// Holds turns a boolean condition into one for Poll and Eventually: nil
// when cond reports true, ErrNotYet otherwise.
func Holds(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	}
}
