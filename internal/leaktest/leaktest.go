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
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(grace)
		for {
			err := goleak.Find(opts...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "leaktest: goroutines still running %v after the tests: %v\n", grace, err)
				code = 1
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	os.Exit(code)
}
