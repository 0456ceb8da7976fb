package coordinator_test

import (
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestOnOneCluster runs the lease scenarios that need a formed three-node
// cluster but change nothing about it (no node stops, restarts, leaves or
// is cut off) on one cluster formed once, instead of forming one each: a
// formation and three idle nodes per scenario were most of their CPU. Each
// scenario uses lease names of its own. The ones that slow the leader's
// answers to one follower run one after the other, first; the others then
// run in parallel, with no fault active.
func TestOnOneCluster(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	cl.WaitFormed(formTimeout)
	for _, sc := range []struct {
		name     string
		parallel bool // no fault injected: may overlap the others
		run      func(*testing.T, *holdfasttest.Cluster)
	}{
		{"TimedOutForwardedTryAcquireLeavesNoOrphanGrant", false, testTimedOutForwardedTryAcquireLeavesNoOrphanGrant},
		{"TimedOutForwardedSemaphoreAcquireLeavesNoPermit", false, testTimedOutForwardedSemaphoreAcquireLeavesNoPermit},
		{"AcquireNotBlockedBehindOrphanedQueueEntry", false, testAcquireNotBlockedBehindOrphanedQueueEntry},
		{"LateCopiesOfGivenUpRequestsChangeNothing", false, testLateCopiesOfGivenUpRequestsChangeNothing},
		{"CancelledTryAcquireOnLeaderLeavesNoOrphanGrant", true, testCancelledTryAcquireOnLeaderLeavesNoOrphanGrant},
		{"ReleaseWithCancelledContextReleasesOnFollower", true, testReleaseWithCancelledContextReleasesOnFollower},
		{"HolderValue", true, testHolderValue},
		{"ElectionNeverReportsReleasedHolder", true, testElectionNeverReportsReleasedHolder},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if sc.parallel {
				t.Parallel()
			}
			sc.run(t, cl.For(t))
		})
	}
}

// leaseInfo returns the named lease's row of c.Leases().
func leaseInfo(c *coordinator.Coordinator, name string) (coordinator.LeaseInfo, bool) {
	for _, li := range c.Leases() {
		if li.Name == name {
			return li, true
		}
	}
	return coordinator.LeaseInfo{}, false
}
