package fsm

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }
