package prometheus_test

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests, allowing
// memberlist's in-flight probe (which ends on its own within a probe
// interval after Shutdown) the time to end.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 10*time.Second)
}
