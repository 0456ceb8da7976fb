package main

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests (run closes
// its idle connections; memberlist's in-flight probe gets its grace).
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 10*time.Second)
}
