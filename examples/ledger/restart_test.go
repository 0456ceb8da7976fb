//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// insecure is the security of the restart and recovery scenarios' nodes.
func insecure(string) ([]string, *http.Client) { return []string{"-insecure"}, nil }

// without returns names without the given ones.
func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}

// nodeIDs reads each running node's identity from its own status.
func (lc *ledgerCluster) nodeIDs(t *testing.T, names []string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, n := range names {
		ids[n] = mustStatus(t, lc.procs[n]).ID
	}
	return ids
}

// checkVotersKept fails the test unless the observer's configuration has
// exactly the voters of ids (a restart or a crash removes nobody).
func (lc *ledgerCluster) checkVotersKept(t *testing.T, ids map[string]string, when string) {
	t.Helper()
	var want []string
	for _, id := range ids {
		want = append(want, id)
	}
	slices.Sort(want)
	var got []string
	poll(t, "the observer's status", 30*time.Second, func() error {
		var err error
		if got, err = lc.voterIDs(); err != nil {
			return notYet("%v", err)
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Fatalf("%s: voters %v, want all of %v", when, got, want)
	}
}

// TestRestartKeepsVote is the deploy that used to be an outage: SIGTERM a
// follower voter of three (a restart), and while it is down SIGKILL the
// raft leader. The terminated node is still a voter, so once it is back (on
// new ports) it and the third voter elect a leader, every shard is owned
// again within TTL + grace + an election + 2s of its restart, and its
// replica catches up; the killed node comes back too, and no configuration
// in the raft log ever had fewer than three voters.
func TestRestartKeepsVote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and restarts ledger processes")
	}
	t.Parallel()
	lc := newLedgerCluster(t, insecure)
	names := []string{"n1", "n2", "n3"}
	startVoters(t, lc, names, nil)
	ids := lc.nodeIDs(t, names)
	leader := lc.waitLeaderAmong(t, 30*time.Second, names...)
	followers := without(names, leader)
	victim, third := followers[0], followers[1]
	lc.observeFrom(t, third)

	lc.terminate(t, victim)
	lc.checkVotersKept(t, ids, "after SIGTERM of "+victim)
	lc.crash(t, leader) // the restart window: two of three voters down
	p, restarted := lc.restartVoter(t, victim, third, 3, false)
	p.waitReady(t, 60*time.Second)
	now := lc.waitLeaderAmong(t, 60*time.Second, victim, third)
	took := lc.waitServing(t, []string{victim, third}, nil, restarted)
	t.Logf("SIGTERM %s, SIGKILL %s (the leader) while %s was down: leader %s and every shard owned %v after %s restarted (bound %v)",
		victim, leader, victim, now, took.Round(time.Millisecond), victim, reownBound)
	if took > reownBound {
		t.Errorf("shards owned again %v after the restart, beyond TTL + grace + election + 2s = %v", took, reownBound)
	}
	if id := mustStatus(t, p).ID; id != ids[victim] {
		t.Errorf("%s came back as %s, want its identity %s", victim, id, ids[victim])
	}
	target := mustStatus(t, lc.procs[third]).AppliedIndex
	poll(t, victim+" caught up", 30*time.Second, func() error {
		if st, err := p.status(); err != nil || st.AppliedIndex < target {
			return notYet("applied %d of %d (%v)", st.AppliedIndex, target, err)
		}
		return nil
	})
	lc.checkVotersKept(t, ids, "with "+leader+" dead")
	back, _ := lc.restartVoter(t, leader, third, 3, true)
	back.waitReady(t, 60*time.Second)
	lc.waitHealthyVoters(t, 3)
	lc.checkVotersKept(t, ids, "after both restarts")
	lc.waitSteady(t, names...)
	if r := lc.rejectedBy(t); len(r) > 0 {
		t.Errorf("writes refused by the fence: %v (two owners of one shard)", r)
	}
	lc.checkLedger(t)
	lc.checkVoterCounts(t, third, 3)
}

// rollingSeeds is how many seeds TestRollingRestartWithACrash runs
// (HOLDFAST_ROLLING_SEEDS, default 1), or the one seed
// HOLDFAST_ROLLING_SEED names.
func rollingSeeds(t *testing.T) []uint64 {
	if s := os.Getenv("HOLDFAST_ROLLING_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOLDFAST_ROLLING_SEED: %v", err)
		}
		return []uint64{seed}
	}
	n := 1
	if s := os.Getenv("HOLDFAST_ROLLING_SEEDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("HOLDFAST_ROLLING_SEEDS: %q", s)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(time.Now().UnixNano()) + uint64(i)*0x9e3779b97f4a7c15
	}
	return seeds
}

// TestRollingRestartWithACrash restarts the three voters one after the
// other (SIGTERM, start again on new ports, wait for three healthy voters:
// the operator's rule), and at one random point (seeded) SIGKILLs one of
// the other voters: while the restarted node is down, or just after it is
// back. Each time a majority of the configuration is running, the cluster
// has a leader and every shard is owned again within TTL + grace + an
// election + 2s; no voter is ever removed, and no configuration in the
// raft log has fewer than three voters.
func TestRollingRestartWithACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and restarts ledger processes")
	}
	t.Parallel()
	for _, seed := range rollingSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay: HOLDFAST_ROLLING_SEED=%d go test ./examples/ledger -run 'TestRollingRestartWithACrash' -count=1", seed)
			rollingRestart(t, seed)
		})
	}
}

func rollingRestart(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	crashStep, crashEarly := rng.IntN(3), rng.IntN(2) == 0
	lc := newLedgerCluster(t, insecure)
	names := []string{"n1", "n2", "n3"}
	startVoters(t, lc, names, nil)
	ids := lc.nodeIDs(t, names)
	for step, name := range names {
		others := without(names, name)
		lc.observeFrom(t, others...)
		lc.terminate(t, name)
		lc.checkVotersKept(t, ids, "after SIGTERM of "+name)
		crashed := ""
		if step == crashStep {
			crashed = others[rng.IntN(2)]
		}
		if crashed != "" && crashEarly {
			lc.crash(t, crashed)
		}
		p, restarted := lc.restartVoter(t, name, without(others, crashed)[0], 3, false)
		if crashed != "" && !crashEarly {
			lc.crash(t, crashed)
		}
		live := without(names, crashed)
		lc.observeFrom(t, without(live, name)...)
		p.waitReady(t, 60*time.Second)
		leader := lc.waitLeaderAmong(t, 60*time.Second, live...)
		took := lc.waitServing(t, live, nil, restarted)
		what := "restart of " + name
		if crashed != "" {
			what = fmt.Sprintf("%s with %s killed %s", what, crashed, map[bool]string{true: "while it was down", false: "just after it was back"}[crashEarly])
		}
		t.Logf("%s: leader %s, every shard owned %v after the restart (bound %v)", what, leader, took.Round(time.Millisecond), reownBound)
		if took > reownBound {
			t.Errorf("%s: shards owned again %v after the restart, beyond %v", what, took, reownBound)
		}
		if crashed != "" {
			q, _ := lc.restartVoter(t, crashed, name, 3, true)
			q.waitReady(t, 60*time.Second)
		}
		lc.waitHealthyVoters(t, 3) // before the next restart
		lc.checkVotersKept(t, ids, "after the "+what)
	}
	lc.waitSteady(t, names...)
	if r := lc.rejectedBy(t); len(r) > 0 {
		t.Errorf("writes refused by the fence: %v (two owners of one shard)", r)
	}
	lc.checkLedger(t)
	lc.checkVoterCounts(t, lc.observer.name, 3)
}

// TestLeaveOnTerminate: a voter started with -leave-on-terminate leaves
// for good on SIGTERM (exit 0, "left"), the eligible spare promoted in its
// place; holdfastctl leave through a voter's admin endpoint is refused with
// no spare left, and with -force decommissions it (the process exits 0);
// a last spare-less -leave-on-terminate is refused, and the node stops
// keeping its vote and exits 1 saying why.
func TestLeaveOnTerminate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs ledger processes")
	}
	t.Parallel()
	ctl := buildHoldfastctl(t)
	lc := newLedgerCluster(t, insecure)
	startVoters(t, lc, []string{"n1", "n2", "n3"}, map[string][]string{
		"n3": {"-leave-on-terminate"},
		"n4": {"-data", filepath.Join(lc.dir, "n4"), "-leave-on-terminate"}, // an eligible spare
	})
	ids := lc.nodeIDs(t, []string{"n1", "n2", "n3", "n4"})
	lc.observeFrom(t, "n1")
	lc.waitHealthyVoters(t, 3)
	if st := mustStatus(t, lc.observer); len(st.Voters) != 3 || slices.ContainsFunc(st.Voters, func(v admin.Voter) bool { return v.Name == "n4" }) {
		t.Fatalf("voters %v: want n1, n2, n3", st.Voters)
	}
	lc.terminate(t, "n3")
	if !lc.procs["n3"].out.has("left", map[string]string{"node": "n3"}) {
		t.Errorf("n3 did not print its left line")
	}
	lc.checkVotersKept(t, map[string]string{"n1": ids["n1"], "n2": ids["n2"], "n4": ids["n4"]}, "after n3 left")

	n2 := lc.procs["n2"]
	code, out := runCtl(t, ctl, "-addr", n2.http, "-confirm", "n2", "leave")
	if code != 1 || !strings.Contains(out, "409 Conflict") || !strings.Contains(out, "leave refused") {
		t.Fatalf("holdfastctl leave with no spare: exit %d\n%s", code, out)
	}
	if code, out = runCtl(t, ctl, "-addr", n2.http, "-confirm", "n2", "-force", "leave"); code != 0 || !strings.Contains(out, "left the cluster for good") {
		t.Fatalf("holdfastctl leave -force: exit %d\n%s", code, out)
	}
	select {
	case <-n2.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("n2 still running 60s after it left")
	}
	if n2.waitErr != nil || !n2.out.has("left", map[string]string{"node": "n2"}) {
		t.Errorf("n2 after leaving: %v; want exit 0 and a left line", n2.waitErr)
	}
	lc.checkVotersKept(t, map[string]string{"n1": ids["n1"], "n4": ids["n4"]}, "after n2's forced leave")

	n4 := lc.procs["n4"]
	n4.signal(t, syscall.SIGTERM)
	select {
	case <-n4.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("n4 still running 60s after SIGTERM")
	}
	b, _ := os.ReadFile(n4.errLog)
	if n4.waitErr == nil || !strings.Contains(string(b), "-leave-on-terminate: holdfast: leave refused") {
		t.Errorf("n4's refused leave: %v, stderr tail:\n%s", n4.waitErr, lastLines(string(b), 5))
	}
	lc.checkVotersKept(t, map[string]string{"n1": ids["n1"], "n4": ids["n4"]}, "after n4's refused leave")
	if r := lc.rejectedBy(t); len(r) > 0 {
		t.Errorf("writes refused by the fence: %v", r)
	}
	lc.checkLedger(t)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
