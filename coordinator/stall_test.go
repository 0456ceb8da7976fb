package coordinator_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
)

// A machine stalled past the session TTL (docs/TESTING.md) ends sessions,
// and with them leases, permits and shard ownership, as it should. The
// helpers here let a scenario tell that from a defect by the cluster's own
// state, read after the state it excuses.

// failUnlessEnded reports a failed claim about a grant the test holds: an
// error while g still believes it holds (its Err, read after the state the
// claim read, is nil: the grant was live then), a log line once g has
// ended (its session ended under a stall, so the claim does not apply).
func failUnlessEnded(t *testing.T, g interface{ Err() error }, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if err := g.Err(); err != nil {
		t.Logf("%s; not a failure: the grant ended (%v: the machine stalled past its session's TTL)", msg, err)
		return
	}
	t.Error(msg)
}

// sessionsGone returns the names of the nodes whose session in sessions
// (node name to session ID) c's replica no longer holds. A session never
// comes back, so one it still holds lived through everything the replica
// applied before this call.
func sessionsGone(c *coordinator.Coordinator, sessions map[string]string) []string {
	var gone []string
	for name, id := range sessions {
		if !c.HasSession(id) {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	return gone
}
