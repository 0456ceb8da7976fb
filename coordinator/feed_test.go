package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// feedCluster starts 3 voters and 2 diskless replicas under ReplicaFeed.
func feedCluster(t *testing.T, inMemory bool) *holdfasttest.Cluster {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Voters: 3, NoDataDir: []int{3, 4}, InMemory: inMemory,
		Configure: func(_ int, c *coordinator.Config) { c.Cluster.ReplicaFeed = true }})
	checkOneCluster(t, cl)
	for _, i := range []int{3, 4} {
		cl.WaitFor(fmt.Sprintf("node %d ready", i), formTimeout, func() error { return cl.Node(i).C().Ready() })
	}
	return cl
}

// syncSees writes a lease on writer, then checks that Sync on each replica
// followed by a read shows it with its token (the linearizable read), and
// releases it.
func syncSees(t *testing.T, cl *holdfasttest.Cluster, writer int, name string, replicas ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := cl.Node(writer).C().Acquire(ctx, name)
	if err != nil {
		t.Fatalf("acquire %s on node %d: %v", name, writer, err)
	}
	for _, r := range replicas {
		c := cl.Node(r).C()
		if err := c.Sync(ctx); err != nil {
			t.Fatalf("sync on node %d: %v", r, err)
		}
		if h, ok := c.Holder(name); !ok || h.Token != l.Token() {
			failUnlessEnded(t, l, "node %d after Sync: holder of %s %+v (%v), want token %d", r, name, h, ok, l.Token())
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release %s: %v", name, err)
	}
}

// TestReplicaFeedKeepsRaftToVoters: under ReplicaFeed the diskless nodes
// stay out of the raft configuration, follow the state through the feed,
// hold sessions, take leases themselves, and read after Sync everything
// committed before it; on real TCP.
func TestReplicaFeedKeepsRaftToVoters(t *testing.T) {
	t.Parallel()
	cl := feedCluster(t, false)
	waitSuffrages(t, cl, 3, 0)
	for i := range 5 {
		syncSees(t, cl, i%3, fmt.Sprintf("feed-%d", i), 3, 4)
	}
	syncSees(t, cl, 3, "feed-from-replica", 4, 0)
	cl.WaitFor("every replica at the leader's applied index", formTimeout, cl.CaughtUp)
}

// TestReplicaFeedServerCut: on the in-memory network, each voter that is
// not the leader is isolated in turn, then healed; the replicas move to a
// server that answers and keep reading what was committed.
func TestReplicaFeedServerCut(t *testing.T) {
	t.Parallel()
	cl := feedCluster(t, true)
	leader := cl.WaitLeader(formTimeout)
	for i := range 3 {
		if cl.Node(i) == leader {
			continue
		}
		cl.Isolate(i)
		syncSees(t, cl, leader.Index, fmt.Sprintf("cut-%d", i), 3, 4)
		cl.Heal()
		cl.WaitFor("every replica at the leader's applied index", formTimeout, cl.CaughtUp)
	}
}

// TestReplicaFeedServerRestart: a voter restarts (real TCP, its data dir
// kept) while the replicas read through Sync; none of them loses its
// session.
func TestReplicaFeedServerRestart(t *testing.T) {
	t.Parallel()
	cl := feedCluster(t, false)
	s3, _ := cl.Node(3).C().Session()
	s4, _ := cl.Node(4).C().Session()
	leader := cl.WaitLeader(formTimeout)
	victim := (leader.Index + 1) % 3
	cl.Kill(victim)
	syncSees(t, cl, leader.Index, "restart-a", 3, 4)
	cl.Restart(victim)
	cl.WaitFormed(formTimeout)
	syncSees(t, cl, leader.Index, "restart-b", 3, 4)
	if a, _ := cl.Node(3).C().Session(); a.ID != s3.ID {
		t.Errorf("node 3's session changed: %s → %s", s3.ID, a.ID)
	}
	if a, _ := cl.Node(4).C().Session(); a.ID != s4.ID {
		t.Errorf("node 4's session changed: %s → %s", s4.ID, a.ID)
	}
}
