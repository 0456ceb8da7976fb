package coordinator_test

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests. memberlist's
// Shutdown does not wait for a probe already in flight, which ends on its
// own within a probe interval: the check allows it that long.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 10*time.Second)
}
