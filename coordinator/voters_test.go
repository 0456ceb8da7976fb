package coordinator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// waitSuffrages waits until the leader's configuration has exactly voters
// voters and nonVoters non-voters.
func waitSuffrages(t *testing.T, cl *holdfasttest.Cluster, voters, nonVoters int) {
	t.Helper()
	cl.WaitFor(fmt.Sprintf("%d voters and %d non-voters", voters, nonVoters), formTimeout, func() error {
		v, nv, err := cl.Suffrages()
		if err != nil {
			return err
		}
		if v != voters || nv != nonVoters {
			return fmt.Errorf("%w: %d voters, %d non-voters", holdfasttest.ErrNotYet, v, nv)
		}
		return nil
	})
}

// TestSevenNodesThreeVoters: five voter-eligible nodes and two without a
// data dir, one of them fed outside raft (the default) and one with
// ReplicaFeed off: three voters, and as raft non-voters the two standbys and
// the diskless node that asked to be in raft; a cluster may mix the two.
func TestSevenNodesThreeVoters(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 7, Voters: 3, NoDataDir: []int{5, 6},
		Configure: func(i int, c *coordinator.Config) { c.Cluster.ReplicaFeed = i != 6 }})
	checkOneCluster(t, cl)
	waitSuffrages(t, cl, 3, 3)
	cl.WaitFor("node6 in raft, the fed node5 not", formTimeout, func() error {
		got := cl.Node(0).C().NonVoters()
		if slices.Contains(got, cl.Node(5).C().ID()) || !slices.Contains(got, cl.Node(6).C().ID()) {
			return fmt.Errorf("%w: raft non-voters %v: want node6 (%s), not node5 (%s)", holdfasttest.ErrNotYet, got,
				cl.Node(6).C().ID(), cl.Node(5).C().ID())
		}
		return nil
	})
	cl.WaitFor("every replica at the leader's applied index", formTimeout, cl.CaughtUp)
	for _, n := range cl.Running() {
		for _, m := range n.C().Members() {
			if m.Suffrage == coordinator.SuffrageVoter && !m.Eligible {
				t.Errorf("%s sees %s (no data dir) as a voter", n.Name, m.Name)
			}
		}
	}
}

// configHistory returns the voter sets of every raft configuration in a
// stopped node's log, in log order.
func configHistory(t *testing.T, dataDir string) [][]string {
	t.Helper()
	hist, err := holdfasttest.VoterHistory(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// checkOneVoterChangeAtATime asserts that successive voter sets differ by
// at most one server and never fall below minVoters.
func checkOneVoterChangeAtATime(t *testing.T, hist [][]string, minVoters int) {
	t.Helper()
	for i, vs := range hist {
		if len(vs) < minVoters {
			t.Errorf("configuration %d has %d voters %v, below %d", i, len(vs), vs, minVoters)
		}
		if i == 0 {
			continue
		}
		prev := map[string]bool{}
		for _, v := range hist[i-1] {
			prev[v] = true
		}
		diff := 0
		for _, v := range vs {
			if !prev[v] {
				diff++
			}
			delete(prev, v)
		}
		diff += len(prev)
		if diff > 1 {
			t.Errorf("configuration %d changes %d voters at once: %v -> %v", i, diff, hist[i-1], vs)
		}
	}
}

// testVoterReplaced kills a non-leader voter and waits for autopilot to
// remove it and promote a non-voter in its place.
func testVoterReplaced(t *testing.T, inMemory bool) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Voters: 3, InMemory: inMemory})
	leader := cl.WaitFormed(formTimeout)
	waitSuffrages(t, cl, 3, 2)
	victim := -1
	for _, n := range cl.Running() {
		for _, m := range leader.C().Members() {
			if m.Name == n.Name && m.Suffrage == coordinator.SuffrageVoter && n != leader {
				victim = n.Index
			}
		}
	}
	victimID := cl.Node(victim).C().ID()
	cl.Kill(victim)
	cl.WaitFor("the dead voter removed and a non-voter promoted", formTimeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		voters := l.C().Voters()
		for _, v := range voters {
			if v == victimID {
				return fmt.Errorf("%w: dead voter still in configuration", holdfasttest.ErrNotYet)
			}
		}
		if len(voters) != 3 {
			return fmt.Errorf("%w: %d voters", holdfasttest.ErrNotYet, len(voters))
		}
		return nil
	})
	if inMemory {
		return
	}
	survivor := cl.WaitLeader(formTimeout)
	cl.Close()
	hist := configHistory(t, survivor.DataDir)
	checkOneVoterChangeAtATime(t, hist, 3)
	t.Logf("voter history: %v", hist)
}

func TestDeadVoterReplaced(t *testing.T) { testVoterReplaced(t, false) }

func TestDeadVoterReplacedInMemory(t *testing.T) { testVoterReplaced(t, true) }

func TestLeaderKilled(t *testing.T) {
	t.Parallel()
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprintf("inmem=%v", inMemory), func(t *testing.T) {
			cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: inMemory})
			leader := cl.WaitFormed(formTimeout)
			id, index := leader.C().ClusterID(), leader.C().AppliedIndex()
			cl.Kill(leader.Index)
			next := cl.WaitLeader(formTimeout)
			if next == leader {
				t.Fatal("dead node still leads")
			}
			if next.C().ClusterID() != id {
				t.Fatalf("state lost: cluster %s, was %s", next.C().ClusterID(), id)
			}
			// A new leader learns what was committed once an entry of its
			// own term commits, and applies it after: its applied index
			// may lag the old leader's for a moment (it did under load),
			// but must reach it.
			cl.WaitFor("the new leader to apply what the old one had", formTimeout, func() error {
				if got := next.C().AppliedIndex(); got < index {
					return fmt.Errorf("%w: applied index %d, the old leader had %d", holdfasttest.ErrNotYet, got, index)
				}
				return nil
			})
			cl.Start(leader.Index)
			cl.WaitFor("the old leader back in the cluster", formTimeout, cl.Formed)
		})
	}
}

func TestLeaderMinorityPartition(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	var others []int
	for _, n := range cl.Running() {
		if n != leader {
			others = append(others, n.Index)
		}
	}
	cl.Partition([]int{leader.Index}, others)
	cl.WaitFor("a new leader on the majority side", formTimeout, func() error {
		for _, i := range others {
			if cl.Node(i).C().RaftState() == coordinator.StateLeader {
				return nil
			}
		}
		return fmt.Errorf("%w: no leader among %v", holdfasttest.ErrNotYet, others)
	})
	cl.WaitFor("the isolated leader to step down", formTimeout, func() error {
		if s := leader.C().RaftState(); s == coordinator.StateLeader {
			return fmt.Errorf("%w: %s still leads", holdfasttest.ErrNotYet, leader.Name)
		}
		return nil
	})
	cl.Heal()
	cl.WaitFor("one cluster again", formTimeout, cl.Formed)
	cl.WaitFor("replicas caught up", formTimeout, cl.CaughtUp)
}

// TestGracefulShutdownKeepsVoteThenDeadVoterReplaced: the leader's
// graceful Shutdown hands leadership over but keeps the node a voter (a
// restart would find its vote); when it does not come back, the
// dead-voter rule promotes the non-voter and only then removes it: 3
// voters again, and never fewer on the way.
func TestGracefulShutdownKeepsVoteThenDeadVoterReplaced(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3})
	leader := cl.WaitFormed(formTimeout)
	waitSuffrages(t, cl, 3, 1)
	id := leader.C().ID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Stop(ctx, leader.Index); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	next := cl.WaitLeader(formTimeout)
	if voters := next.C().Voters(); !slices.Contains(voters, id) || len(voters) != 3 {
		t.Fatalf("right after the graceful shutdown the voters are %v: want the stopped node still among 3", voters)
	}
	cl.WaitFor("the stopped voter replaced and out of the configuration", formTimeout, func() error {
		if v := len(next.C().Voters()); v < 3 {
			t.Fatalf("the configuration shrank to %d voters", v)
		}
		for _, m := range next.C().Members() {
			if m.ID == id && m.Suffrage != coordinator.SuffrageNone {
				return fmt.Errorf("%w: %s still %s", holdfasttest.ErrNotYet, m.Name, m.Suffrage)
			}
		}
		if v := len(next.C().Voters()); v != 3 {
			return fmt.Errorf("%w: %d voters", holdfasttest.ErrNotYet, v)
		}
		return nil
	})
}
