package coordinator_test

import (
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// voterIndex returns the index of a running voter that does not lead.
func voterIndex(t *testing.T, cl *holdfasttest.Cluster, leader *holdfasttest.Node) int {
	t.Helper()
	for _, m := range leader.C().Members() {
		if m.Suffrage != coordinator.SuffrageVoter || m.ID == leader.C().ID() {
			continue
		}
		for _, n := range cl.Running() {
			if n.Name == m.Name {
				return n.Index
			}
		}
	}
	t.Fatal("no follower voter")
	return -1
}

func TestVoterRestartKeepsIdentity(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	clusterID := leader.C().ClusterID()
	i := voterIndex(t, cl, leader)
	id := cl.Node(i).C().ID()
	cl.Restart(i)
	cl.WaitFor("the restarted voter back", formTimeout, cl.Formed)
	if got := cl.Node(i).C().ID(); got != id {
		t.Fatalf("identity changed across restart: %s -> %s", id, got)
	}
	for _, n := range cl.Running() {
		if n.C().ClusterID() != clusterID {
			t.Fatalf("%s is in cluster %s after restart, want %s (second bootstrap?)", n.Name, n.C().ClusterID(), clusterID)
		}
	}
	l := cl.WaitLeader(formTimeout)
	voters := l.C().Voters()
	if len(voters) != 3 {
		t.Fatalf("voters after restart: %v", voters)
	}
	found := false
	for _, v := range voters {
		found = found || v == id
	}
	if !found {
		t.Fatalf("restarted node %s is no longer a voter: %v", id, voters)
	}
}

func TestWipedVoterJoinsAsNewIdentity(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	clusterID := leader.C().ClusterID()
	i := voterIndex(t, cl, leader)
	oldID := cl.Node(i).C().ID()
	cl.Kill(i)
	cl.Wipe(i)
	c := cl.Start(i)
	newID := c.ID()
	if newID == oldID {
		t.Fatal("a wiped data dir kept its identity")
	}
	cl.WaitFor("the old identity removed and the new one a voter", formTimeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		voters := l.C().Voters()
		has := map[string]bool{}
		for _, v := range voters {
			has[v] = true
		}
		if has[oldID] || !has[newID] || len(voters) != 3 {
			return fmt.Errorf("%w: voters %v (old %s, new %s)", holdfasttest.ErrNotYet, voters, oldID, newID)
		}
		return nil
	})
	cl.WaitFor("one cluster", formTimeout, cl.Formed)
	if got := c.ClusterID(); got != clusterID {
		t.Fatalf("wiped node in cluster %s, want %s", got, clusterID)
	}
}

// TestAmnesiacCannotVoteForOldIdentity loses two of three voters, brings one
// back with a wiped data dir at the same address, and shows that raft
// traffic addressed to its old identity is refused (so the lone survivor
// cannot count the empty log's vote as the old voter's), and that the
// cluster recovers once the third voter returns with its data.
func TestAmnesiacCannotVoteForOldIdentity(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	var followers []int
	for _, n := range cl.Running() {
		if n != leader {
			followers = append(followers, n.Index)
		}
	}
	amnesiac, other := followers[0], followers[1]
	oldID := cl.Node(amnesiac).C().ID()
	cl.Kill(amnesiac)
	cl.Kill(other)
	cl.Wipe(amnesiac)
	c := cl.Start(amnesiac)
	cl.WaitFor("raft traffic for the old identity refused", formTimeout, func() error {
		if c.WrongTargetConns() == 0 {
			return fmt.Errorf("%w: no refused raft connection yet", holdfasttest.ErrNotYet)
		}
		return nil
	})
	for _, v := range c.Voters() {
		if v == c.ID() {
			t.Fatalf("amnesiac %s became a voter without a quorum", c.ID())
		}
	}
	cl.Start(other)
	cl.WaitFor("old identity replaced by the new one", formTimeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		for _, v := range l.C().Voters() {
			if v == oldID {
				return fmt.Errorf("%w: old identity still a voter", holdfasttest.ErrNotYet)
			}
		}
		return nil
	})
	cl.WaitFor("one cluster", formTimeout, cl.Formed)
}
