package coordinator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

const formTimeout = 60 * time.Second

// checkOneCluster asserts that every running node reports the same cluster
// ID, sees every running member, and that exactly one node leads.
func checkOneCluster(t *testing.T, cl *holdfasttest.Cluster) {
	t.Helper()
	leader := cl.WaitFormed(formTimeout)
	id := leader.C().ClusterID()
	leaders := 0
	for _, n := range cl.Running() {
		if n.C().ClusterID() != id {
			t.Fatalf("%s in cluster %s, leader %s in %s", n.Name, n.C().ClusterID(), leader.Name, id)
		}
		if n.C().RaftState() == coordinator.StateLeader {
			leaders++
		}
		if got := len(n.C().Members()); got < len(cl.Running()) {
			t.Fatalf("%s sees %d members, want %d", n.Name, got, len(cl.Running()))
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders", leaders)
	}
}

func TestFormsOneCluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes    int
		inMemory bool
	}{{3, false}, {5, false}, {3, true}} {
		t.Run(fmt.Sprintf("nodes=%d/inmem=%v", tc.nodes, tc.inMemory), func(t *testing.T) {
			cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: tc.nodes, Voters: tc.nodes, InMemory: tc.inMemory})
			checkOneCluster(t, cl)
			cl.WaitFor("every node a voter", formTimeout, func() error {
				v, nv, err := cl.Suffrages()
				if err != nil {
					return err
				}
				if v != tc.nodes || nv != 0 {
					return fmt.Errorf("%w: %d voters, %d non-voters", holdfasttest.ErrNotYet, v, nv)
				}
				return nil
			})
		})
	}
}
