package coordinator_test

import (
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestFaultWithoutQuorumTouchesEveryNode: for I3 (no false loss), a fault
// on a voter while another voter is gone for good (wiped, its old identity
// still in the raft configuration) touches every node, since without a
// quorum no node has a leader to keep its session alive; with every voter
// up it touches its victim alone. The long run's seed 62,340 isolated the
// raft leader while a wiped voter was not yet replaced: no leader for 2.2
// s, every session lapsed on its node, and a grant that reached node4 as
// its session lapsed was reported as a false loss, the isolation having
// been counted against the leader only.
func TestFaultWithoutQuorumTouchesEveryNode(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: chaosNodes, Voters: 3, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) { c.Cluster.DeadServerStabilization = 10 * time.Minute }})
	leader := cl.WaitFormed(formTimeout)
	r := &chaosRun{cl: cl}
	if got := r.touchedBy(leader.Index); !slices.Equal(got, []int{leader.Index}) {
		t.Fatalf("every voter up: a fault on the leader touches %v, want [%d]", got, leader.Index)
	}
	voters := leader.C().Voters()
	other := -1
	for _, n := range cl.Running() {
		if n != leader && slices.Contains(voters, n.C().ID()) {
			other = n.Index
			break
		}
	}
	if other < 0 {
		t.Fatalf("no other voter among %v", voters)
	}
	old := cl.Node(other).C().ID()
	cl.Kill(other)
	cl.Wipe(other)
	if c := cl.Start(other); c.ID() == old {
		t.Fatalf("node%d came back with its old identity %s", other, old)
	}
	if got := r.touchedBy(leader.Index); !slices.Equal(got, allNodes()) {
		t.Fatalf("voter node%d wiped (its old identity still a voter: %v): a fault on the leader touches %v, want every node",
			other, leader.C().Voters(), got)
	}
}
