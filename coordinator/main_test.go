package coordinator_test

import (
	"os"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests. memberlist's
// Shutdown does not wait for a probe already in flight, which ends on its
// own within a probe interval: the check allows it that long.
//
// A test that re-executes the test binary as a child process sets
// HOLDFAST_CHILD; the child then runs childMain instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("HOLDFAST_CHILD") != "" && childMain != nil {
		os.Exit(childMain())
	}
	leaktest.VerifyTestMain(m, 10*time.Second)
}

// childMain is the entry point of a re-executed child process (set by the
// file that starts one); nil on platforms without such tests.
var childMain func() int
