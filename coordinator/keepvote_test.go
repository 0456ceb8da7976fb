package coordinator_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// memberFailedFor reports whether obs's gossip has said for at least d that
// the member with the given ID is failed.
func memberFailedFor(obs *coordinator.Coordinator, id string, d time.Duration) error {
	for _, m := range obs.Members() {
		if m.ID == id {
			if m.State == coordinator.MemberFailed && time.Since(m.Since) >= d {
				return nil
			}
			return fmt.Errorf("%w: %s %s for %v", holdfasttest.ErrNotYet, m.Name, m.State, time.Since(m.Since))
		}
	}
	return fmt.Errorf("%w: member %s unknown", holdfasttest.ErrNotYet, id)
}

// TestCutVoterKeepsVoteThenSecondFailureSurvived is the sequence that used
// to take a 3-voter group down: a follower voter cut off for long (gossip
// declares it failed well past DeadServerStabilization) with no node to
// replace it, healed, then the raft leader cut off. The cut voter must
// keep its vote throughout, so the second cut leaves two voters of three
// and a new leader.
func TestCutVoterKeepsVoteThenSecondFailureSurvived(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	victim := voterIndex(t, cl, leader)
	victimID := cl.Node(victim).C().ID()
	cfg := leader.C().Config()
	cl.Isolate(victim)
	// Wait well past the point where the old rule removed it: gossip has
	// reported it failed for DeadServerStabilization plus several
	// reconcile rounds. All the while it must stay a voter of three.
	hold := cfg.Cluster.DeadServerStabilization + 6*cfg.Cluster.ReconcileInterval
	cl.WaitFor("gossip to report the cut voter failed for long", formTimeout, func() error {
		voters := leader.C().Voters()
		if len(voters) != 3 || !slices.Contains(voters, victimID) {
			t.Fatalf("the cut voter lost its vote with no replacement: voters %v", voters)
		}
		return memberFailedFor(leader.C(), victimID, hold)
	})
	if g := leader.C().Health(); !g.Known || g.FailureTolerance != 0 {
		t.Errorf("leader's health with one voter cut: %+v, want known with tolerance 0", g)
	}
	healed := time.Now()
	cl.Heal()
	cl.WaitFor("every node to list the healed voter alive", formTimeout, func() error {
		for _, n := range cl.Running() {
			for _, m := range n.C().Members() {
				if m.ID == victimID && m.State != coordinator.MemberAlive {
					return fmt.Errorf("%w: %s sees it %s", holdfasttest.ErrNotYet, n.Name, m.State)
				}
			}
		}
		return nil
	})
	t.Logf("healed voter alive in every member list %v after the heal", time.Since(healed).Round(time.Millisecond))
	var others []int
	for _, n := range cl.Running() {
		if n != leader {
			others = append(others, n.Index)
		}
	}
	cut := time.Now()
	cl.Partition([]int{leader.Index}, others)
	cl.WaitFor("a new leader among the healed voter and the other", formTimeout, func() error {
		for _, i := range others {
			if cl.Node(i).C().RaftState() == coordinator.StateLeader {
				return nil
			}
		}
		return fmt.Errorf("%w: no leader among %v", holdfasttest.ErrNotYet, others)
	})
	t.Logf("new leader %v after the leader's cut", time.Since(cut).Round(time.Millisecond))
	cl.Heal()
	cl.WaitFor("one cluster again", formTimeout, cl.Formed)
}
