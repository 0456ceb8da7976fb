package coordinator_test

import (
	"flag"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// clusterParallel is how many tests that call t.Parallel run at once
// unless -parallel says otherwise. A cluster test spends most of its time
// waiting on timers (elections, session TTLs, gossip probes), not on the
// CPU, so more of them than GOMAXPROCS (go test's default) fit on a small
// machine. Under the race detector, which multiplies the CPU every test
// spends, go test's default stays.
const clusterParallel = 8

// TestMain fails the run if any goroutine outlives the tests. memberlist's
// Shutdown does not wait for a probe already in flight, which ends on its
// own within a probe interval: the check allows it that long.
//
// A test that re-executes the test binary as a child process sets
// HOLDFAST_CHILD; the child then runs childMain instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(simChildEnv) != "" {
		// A TestSimulation child: no heap profile samples, which are drawn
		// from the runtime's per-thread random source at points that depend
		// on how many bytes were allocated, and so would shift the choices
		// (select, timer order) that draw from it after them.
		runtime.MemProfileRate = 0
	}
	if os.Getenv("HOLDFAST_CHILD") != "" && childMain != nil {
		os.Exit(childMain())
	}
	flag.Parse()
	if !chaosRace {
		testkit.DefaultParallel(clusterParallel)
	}
	leaktest.VerifyTestMain(m, 10*time.Second)
}

// childMain is the entry point of a re-executed child process (set by the
// file that starts one); nil on platforms without such tests.
var childMain func() int
