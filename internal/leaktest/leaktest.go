package leaktest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// VerifyTestMain runs the tests, then polls for leaked goroutines for up to
// grace; it exits non-zero if any remain (or if the tests failed).
func VerifyTestMain(m *testing.M, grace time.Duration, opts ...goleak.Option) {
	os.Exit(Run(m, grace, opts...))
}

// Run is VerifyTestMain without the exit: it returns the code to exit
// with, so that a TestMain can clean up what the tests shared first.
func Run(m *testing.M, grace time.Duration, opts ...goleak.Option) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(grace)
	for {
		err := goleak.Find(opts...)
		if err == nil {
			return code
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "leaktest: goroutines still running %v after the tests: %v\n", grace, err)
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
}
