package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests (run closes
// its idle connections; memberlist's in-flight probe gets its grace).
// HOME names a directory that does not exist, so that no certificate in
// the default directory (~/.holdfast/certs) of whoever runs the tests is
// picked up; a test of the default directory sets HOME itself.
func TestMain(m *testing.M) {
	os.Setenv("HOME", filepath.Join(os.TempDir(), fmt.Sprintf("holdfastctl-test-no-home-%d", os.Getpid())))
	leaktest.VerifyTestMain(m, 10*time.Second)
}
