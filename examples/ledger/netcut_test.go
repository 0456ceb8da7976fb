//go:build linux

package main

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/netns"
)

// TestNetworkCuts runs the scenarios of real link cuts, in parallel.
func TestNetworkCuts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ledger processes in network namespaces through link cuts")
	}
	netns.Require(t)
	bin := buildLedger(t)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, string)
	}{
		{"follower-then-leader", func(t *testing.T, bin string) { testCutThenCut(t, bin, false) }},
		{"leader-then-follower", func(t *testing.T, bin string) { testCutThenCut(t, bin, true) }},
		{"five-voters", testFiveVoters},
		{"killed-voter-replaced", testKilledVoterReplaced},
		{"killed-voter-kept", testKilledVoterKept},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			sc.run(t, bin)
			t.Logf("scenario took %v", time.Since(start).Round(time.Second))
		})
	}
}

// testCutThenCut: 3 voters; cut one voter 3 × TTL, heal it, and 2s later
// cut another. leaderFirst picks the leader for the first cut and a
// follower for the second; otherwise a follower first, then the leader.
func testCutThenCut(t *testing.T, bin string, leaderFirst bool) {
	cc := startCutCluster(t, bin, 3, 0)
	cc.tolerance(t, "before the first cut")
	leader, followers := cc.leaderAndFollowers(t)
	first := followers[0]
	if leaderFirst {
		first = leader
	}
	at := cc.cutNodes(t, first)
	cc.waitReowned(t, "cutting "+first, at)
	cc.tolerance(t, "with "+first+" cut")
	cc.holdFault(t, at.Add(cutFor), 3) // the fault lasts cutFor
	cc.healNodes(first)
	healed := time.Now()
	cc.recordAlive(first, healed, healed.Add(healedGap))
	cc.holdFault(t, healed.Add(healedGap), 3) // the scenario: the second cut comes 2s after the heal
	cc.tolerance(t, fmt.Sprintf("%v after healing %s", healedGap, first))
	leader, followers = cc.leaderAndFollowers(t)
	second := leader
	if leaderFirst {
		second = followers[0]
		if second == first && len(followers) > 1 {
			second = followers[1]
		}
	}
	if second == first {
		t.Fatalf("no node to cut second besides %s", first)
	}
	at = cc.cutNodes(t, second)
	cc.waitReowned(t, fmt.Sprintf("cutting %s %v after healing %s", second, time.Since(healed).Round(time.Millisecond), first), at)
	cc.tolerance(t, "with "+second+" cut")
	cc.healNodes(second)
	cc.observe(t)
	cc.waitHealthy(t, 3)
	cc.tolerance(t, "after healing "+second)
	cc.checkNoDoubleOwner(t)
	cc.checkVoterHistory(t, 3)
}

// testFiveVoters: 5 voters; cut two at once; then cut one, heal it, and
// 2s later cut two others.
func testFiveVoters(t *testing.T, bin string) {
	cc := startCutCluster(t, bin, 5, 0)
	cc.tolerance(t, "before the cuts")
	leader, followers := cc.leaderAndFollowers(t)
	at := cc.cutNodes(t, followers[0], leader)
	cc.waitReowned(t, fmt.Sprintf("cutting %s and %s (the leader) at once", followers[0], leader), at)
	cc.tolerance(t, "with two voters cut")
	cc.holdFault(t, at.Add(cutFor), 5)
	cc.healNodes(followers[0], leader)
	cc.waitHealthy(t, 5)
	cc.waitSteady(t, cc.live()...) // every node owns shards again before the next cut
	cc.tolerance(t, "after healing both")

	leader, followers = cc.leaderAndFollowers(t)
	one := followers[0]
	at = cc.cutNodes(t, one)
	cc.waitReowned(t, "cutting "+one, at)
	cc.holdFault(t, at.Add(cutFor), 5)
	cc.healNodes(one)
	healed := time.Now()
	cc.recordAlive(one, healed, healed.Add(healedGap))
	cc.holdFault(t, healed.Add(healedGap), 5)
	leader, followers = cc.leaderAndFollowers(t)
	var other string
	for _, f := range followers {
		if f != one {
			other = f
			break
		}
	}
	at = cc.cutNodes(t, leader, other)
	cc.waitReowned(t, fmt.Sprintf("cutting %s (the leader) and %s %v after healing %s", leader, other, healedGap, one), at)
	cc.tolerance(t, "with the second two cut")
	cc.healNodes(leader, other)
	cc.observe(t)
	cc.waitHealthy(t, 5)
	cc.checkNoDoubleOwner(t)
	cc.checkVoterHistory(t, 5)
}

// testKilledVoterReplaced: 3 voters and a fourth eligible node; a voter
// killed for good is replaced by the fourth, and no configuration in the
// raft log has fewer than 3 voters.
func testKilledVoterReplaced(t *testing.T, bin string) {
	cc := startCutCluster(t, bin, 3, 1)
	_, followers := cc.leaderAndFollowers(t)
	victim := followers[0]
	if victim == "n1" && len(followers) > 1 {
		victim = followers[1] // keep n1, whose raft log the test reads at the end
	}
	victimID := mustStatus(t, cc.procs[victim]).ID
	cc.procs[victim].signal(t, syscall.SIGKILL)
	at := time.Now()
	cc.cut[victim] = true
	cc.observe(t)
	cc.waitReowned(t, "killing "+victim, at)
	poll(t, "the killed voter replaced by the fourth node", 60*time.Second, func() error {
		st, err := cc.observer.status()
		if err != nil {
			return notYet("%v", err)
		}
		if len(st.Voters) != 3 || slices.ContainsFunc(st.Voters, func(v admin.Voter) bool { return v.ID == victimID }) {
			return notYet("voters %v", st.Voters)
		}
		return nil
	})
	cc.figs = append(cc.figs, fmt.Sprintf("killed voter %s replaced %v after the kill", victim, time.Since(at).Round(time.Millisecond)))
	cc.waitHealthy(t, 3)
	cc.tolerance(t, "after the replacement")
	cc.checkNoDoubleOwner(t)
	cc.observer = cc.procs["n1"] // the victim is never n1
	cc.checkVoterHistory(t, 3)
}

// testKilledVoterKept: 3 voters, no spare; a voter killed for good stays a
// voter, and restarted with its data dir restartAfter later it votes at
// once: cutting another voter then leaves the leader and it, a quorum.
func testKilledVoterKept(t *testing.T, bin string) {
	cc := startCutCluster(t, bin, 3, 0)
	_, followers := cc.leaderAndFollowers(t)
	victim := followers[0]
	victimID := mustStatus(t, cc.procs[victim]).ID
	cc.procs[victim].signal(t, syscall.SIGKILL)
	at := time.Now()
	cc.cut[victim] = true
	cc.observe(t)
	cc.waitReowned(t, "killing "+victim, at)
	cc.tolerance(t, "with "+victim+" dead")
	for time.Since(at) < restartAfter { // the node stays dead restartAfter; its vote must stay throughout
		st, err := cc.observer.status()
		if err == nil && !slices.ContainsFunc(st.Voters, func(v admin.Voter) bool { return v.ID == victimID }) {
			t.Fatalf("the dead voter lost its vote with no replacement: voters %v", st.Voters)
		}
		time.Sleep(200 * time.Millisecond) // sampling the configuration while the fault lasts
	}
	p := cc.startNode(t, victim, 3)
	p.waitReady(t, 60*time.Second)
	restarted := time.Now()
	delete(cc.cut, victim)
	cc.waitHealthy(t, 3)
	cc.figs = append(cc.figs, fmt.Sprintf("%s back as a healthy voter %v after its restart (%v after its kill)",
		victim, time.Since(restarted).Round(time.Millisecond), time.Since(at).Round(time.Millisecond)))
	leader, followers := cc.leaderAndFollowers(t)
	var other string // a follower other than the restarted node: the leader and it remain
	for _, f := range followers {
		if f != victim && other == "" {
			other = f
		}
	}
	if other == "" {
		t.Fatalf("no follower besides %s (leader %s, followers %v)", victim, leader, followers)
	}
	at = cc.cutNodes(t, other)
	cc.waitReowned(t, fmt.Sprintf("cutting %s once %s was back", other, victim), at)
	cc.healNodes(other)
	cc.observe(t)
	cc.waitHealthy(t, 3)
	cc.checkNoDoubleOwner(t)
	cc.checkVoterHistory(t, 3)
}

func mustStatus(t *testing.T, p *proc) admin.Status {
	t.Helper()
	st, err := p.status()
	if err != nil {
		t.Fatal(err)
	}
	return st
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

func voterCounts(hist [][]string) []int {
	out := make([]int, len(hist))
	for i, v := range hist {
		out[i] = len(v)
	}
	return out
}
