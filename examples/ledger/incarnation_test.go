//go:build linux

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// TestLedgerRecreatedCluster: a cluster writes the ledger; its non-voter
// n4 (which never checks its lease before writing) is paused with SIGSTOP,
// the three voters are killed and their data dirs removed: every data dir
// of the cluster is gone. A new cluster of fresh nodes starts on the same
// database. Its owners write every shard at once (the fence refuses none
// of them: its tokens start above the old cluster's, from the creating
// leader's clock); n4, resumed, is refused on every write; and the audit
// finds no shard on which an accepted token is lower than an earlier one.
func TestLedgerRecreatedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two clusters of processes through SIGSTOP and SIGKILL")
	}
	t.Parallel()
	lc := startLedgerCluster(t)
	oldStatus, err := lc.observer.status()
	if err != nil {
		t.Fatal(err)
	}
	z := lc.procs["n4"]
	lc.waitSteady(t, "n1", "n2", "n3", "n4")
	_, zombie := lc.stopOwner(t, z)
	oldMax := lc.maxFence(t)
	for _, name := range []string{"n1", "n2", "n3"} {
		p := lc.procs[name]
		p.signal(t, syscall.SIGKILL)
		<-p.exited
		if err := os.RemoveAll(filepath.Join(lc.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("old cluster %s (token base %d, last token %d) gone; n4 stopped holding %v; highest fence %d",
		oldStatus.ClusterID, oldStatus.TokenBase, oldStatus.LastToken, zombie, oldMax)

	created := time.Now()
	voter := func(name string) []string {
		return []string{"-data", filepath.Join(lc.dir, name), "-expect", "3"}
	}
	lc.observer = lc.start(t, "m1", voter("m1")...)
	join := lc.observer.waitListening(t, 30*time.Second).kv["gossip"]
	lc.start(t, "m2", append(voter("m2"), "-join", join)...)
	lc.start(t, "m3", append(voter("m3"), "-join", join)...)
	for _, name := range []string{"m1", "m2", "m3"} {
		lc.procs[name].waitReady(t, 30*time.Second)
	}
	st, err := lc.observer.status()
	if err != nil {
		t.Fatal(err)
	}
	if st.ClusterID == oldStatus.ClusterID || st.TokenBase <= oldStatus.LastToken {
		t.Fatalf("new cluster %s with token base %d; the old one %s issued up to %d", st.ClusterID, st.TokenBase, oldStatus.ClusterID, oldStatus.LastToken)
	}
	// Every shard owned by the new cluster and written under its token.
	lc.waitSteady(t, "m1", "m2", "m3")
	t.Logf("new cluster %s (token base %d) wrote every shard %v after its first node started",
		st.ClusterID, st.TokenBase, time.Since(created).Round(time.Millisecond))
	for _, name := range []string{"m1", "m2", "m3"} {
		if n := lc.rejectedOf(t, name); n != 0 {
			t.Errorf("the fence refused %d writes of the new cluster's %s", n, name)
		}
	}

	resumed := time.Now()
	z.signal(t, syscall.SIGCONT)
	waitEvents(t, z, zombie, "rejected")
	for _, s := range sortedKeys(zombie) {
		n, fence := lc.rejections(t, z.name, s, zombie[s])
		t.Logf("shard %d: n4's token %d refused %d times (fence %d)", s, zombie[s], n, fence)
		if n == 0 || fence <= zombie[s] {
			t.Errorf("shard %d: %d refusals of n4's token %d, fence %d", s, n, zombie[s], fence)
		}
	}
	var accepted int
	if err := lc.db.QueryRow("SELECT count(*) FROM writes WHERE node = 'n4' AND at >= ?", resumed.UnixNano()).Scan(&accepted); err != nil {
		t.Fatal(err)
	}
	if accepted != 0 {
		t.Errorf("%d writes of the old cluster's n4 accepted after it resumed", accepted)
	}
	lc.checkLedger(t)
}

// maxFence returns the highest token the ledger's fence columns hold.
func (lc *ledgerCluster) maxFence(t *testing.T) uint64 {
	t.Helper()
	var f int64
	if err := lc.db.QueryRow("SELECT max((SELECT max(fence) FROM shards), (SELECT max(fence) FROM fences))").Scan(&f); err != nil {
		t.Fatal(err)
	}
	return uint64(f)
}

// rejectedOf counts the writes of node the fence refused.
func (lc *ledgerCluster) rejectedOf(t *testing.T, node string) int {
	t.Helper()
	var n int
	if err := lc.db.QueryRow("SELECT count(*) FROM rejected WHERE node = ?", node).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLedgerRejoinOtherCluster: a one-node ledger cluster B is formed,
// stopped, and restarted with -join pointing at a running three-node
// cluster A. It refuses to start (naming -leave-cluster), and A's
// configuration never lists it, as a voter or a non-voter. Restarted alone
// it still belongs to B, with B's token base and shard table, and no entry
// of A's; both clusters keep serving. With its data dir wiped it joins A as
// a new node.
func TestLedgerRejoinOtherCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two clusters of processes")
	}
	t.Parallel()
	rc := startRejoinClusterA(t)
	rc.formClusterB(t)
	rc.checkRefusedWithASeeds(t)
	rc.checkRestartedAlone(t)
	rc.checkWipedJoinsA(t)
}

// rejoinClusters is TestLedgerRejoinOtherCluster's two clusters: A, the
// three nodes n1, n2 and n3 on lc's database, and B, the one node m1 on a
// database and data dir of its own.
type rejoinClusters struct {
	lc       *ledgerCluster
	joinA    string       // A's gossip address (n1's)
	stA, stB admin.Status // A's status from n1; B's from m1 once it wrote
	dataB    string       // m1's data dir
	single   []string     // m1's flags as B's one node
}

// startRejoinClusterA starts cluster A, waits until its table is steady,
// and reads its status.
func startRejoinClusterA(t *testing.T) *rejoinClusters {
	t.Helper()
	lc := newLedgerCluster(t, func(string) ([]string, *http.Client) { return []string{"-insecure"}, nil })
	voter := func(name string) []string {
		return []string{"-data", filepath.Join(lc.dir, name), "-expect", "3"}
	}
	lc.observer = lc.start(t, "n1", voter("n1")...)
	joinA := lc.observer.waitListening(t, 30*time.Second).kv["gossip"]
	lc.start(t, "n2", append(voter("n2"), "-join", joinA)...)
	lc.start(t, "n3", append(voter("n3"), "-join", joinA)...)
	for _, name := range []string{"n1", "n2", "n3"} {
		lc.procs[name].waitReady(t, 30*time.Second)
	}
	lc.waitSteady(t, "n1", "n2", "n3")
	stA, err := lc.observer.status()
	if err != nil {
		t.Fatal(err)
	}
	return &rejoinClusters{lc: lc, joinA: joinA, stA: stA}
}

// formClusterB forms cluster B (m1 alone), waits until m1 has written
// every shard, checks B's cluster ID is not A's, and stops m1.
func (rc *rejoinClusters) formClusterB(t *testing.T) {
	t.Helper()
	lc := rc.lc
	dbB, dataB := filepath.Join(lc.dir, "b.db"), filepath.Join(lc.dir, "m1")
	rc.dataB = dataB
	rc.single = []string{"-db", dbB, "-data", dataB, "-expect", "1", "-voters", "1"}
	m1 := lc.start(t, "m1", rc.single...)
	m1.waitReady(t, 30*time.Second)
	rc.stB = waitWritten(t, m1)
	if rc.stB.ClusterID == rc.stA.ClusterID {
		t.Fatal("two clusters share an ID")
	}
	m1.signal(t, syscall.SIGTERM)
	<-m1.exited
}

// checkRefusedWithASeeds restarts m1 with A's seeds: it exits naming
// -leave-cluster with B's ID and A's ID, and A never lists it.
func (rc *rejoinClusters) checkRefusedWithASeeds(t *testing.T) {
	t.Helper()
	lc, stA, stB := rc.lc, rc.stA, rc.stB
	refused := lc.start(t, "m1", append(rc.single, "-join", rc.joinA)...)
	select {
	case <-refused.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("m1, whose data dir belongs to B, still runs 60s after starting with A's seeds")
	}
	stderr, _ := os.ReadFile(refused.errLog)
	for _, want := range []string{"-leave-cluster " + stB.ClusterID, stA.ClusterID} {
		if refused.waitErr == nil || !strings.Contains(string(stderr), want) {
			t.Fatalf("m1 with A's seeds: %v; stderr lacks %q:\n%s", refused.waitErr, want, stderr)
		}
	}
	lc.checkNotListed(t, stB.ID, "n1", "n2", "n3")
	t.Logf("m1 (cluster %s) with A's seeds (cluster %s) refused to start: %v", stB.ClusterID, stA.ClusterID, refused.waitErr)
}

// checkRestartedAlone restarts m1 alone: it is still B's node, with B's
// identity and token base, leading itself, and A never lists it and keeps
// writing. It stops m1 again.
func (rc *rejoinClusters) checkRestartedAlone(t *testing.T) {
	t.Helper()
	lc, stA, stB := rc.lc, rc.stA, rc.stB
	alone := lc.start(t, "m1", rc.single...)
	alone.waitReady(t, 30*time.Second)
	again := waitWritten(t, alone)
	if again.ClusterID != stB.ClusterID || again.ID != stB.ID || again.TokenBase != stB.TokenBase ||
		again.LastToken < stB.LastToken || again.TokenBase == stA.TokenBase || again.Leader == nil || again.Leader.ID != stB.ID {
		t.Fatalf("m1 restarted alone: %+v; before: cluster %s id %s base %d last %d", again, stB.ClusterID, stB.ID, stB.TokenBase, stB.LastToken)
	}
	lc.checkNotListed(t, stB.ID, "n1", "n2", "n3")
	lc.waitSteady(t, "n1", "n2", "n3") // A keeps writing its database
	t.Logf("m1 restarted alone: cluster %s, token base %d, last token %d (was %d), applied index %d; A's token base %d",
		again.ClusterID, again.TokenBase, again.LastToken, stB.LastToken, again.AppliedIndex, stA.TokenBase)
	alone.signal(t, syscall.SIGTERM)
	<-alone.exited
}

// checkWipedJoinsA wipes m1's data dir and starts it with A's seeds: it
// joins A as a new node, in A's configuration, and owns shards.
func (rc *rejoinClusters) checkWipedJoinsA(t *testing.T) {
	t.Helper()
	lc, stA, stB := rc.lc, rc.stA, rc.stB
	if err := os.RemoveAll(rc.dataB); err != nil {
		t.Fatal(err)
	}
	fresh := lc.start(t, "m1", "-data", rc.dataB, "-join", rc.joinA)
	fresh.waitReady(t, 60*time.Second)
	poll(t, "the wiped m1 in A's configuration", 60*time.Second, func() error {
		st, err := fresh.status()
		if err != nil {
			return notYet("%v", err)
		}
		a, err := lc.observer.status()
		if err != nil {
			return notYet("%v", err)
		}
		if st.ClusterID != stA.ClusterID || st.ID == stB.ID || !listed(a, st.ID) {
			return notYet("m1 in cluster %s as %s; A's voters %v, non-voters %v", st.ClusterID, st.ID, a.Voters, a.NonVoters)
		}
		return nil
	})
	lc.waitSteady(t, "n1", "n2", "n3", "m1")
}

// waitWritten waits until p is ready, owns every shard of its one-node
// cluster and has written to each, and returns its status.
func waitWritten(t *testing.T, p *proc) admin.Status {
	t.Helper()
	var st admin.Status
	poll(t, p.name+" owning and writing every shard", 60*time.Second, func() error {
		list, err := p.shards()
		if err != nil {
			return notYet("%v", err)
		}
		if len(ownedBy(list, p.name)) != testShards {
			return notYet("%s owns %d shards", p.name, len(ownedBy(list, p.name)))
		}
		for _, s := range sortedKeys(ownedBy(list, p.name)) {
			if !p.out.has("wrote", map[string]string{"shard": fmt.Sprint(s)}) {
				return notYet("no write to shard %d yet", s)
			}
		}
		st, err = p.status()
		return err
	})
	return st
}

// checkNotListed checks that none of the nodes' raft configurations lists
// the raft ID id, as a voter or a non-voter.
func (lc *ledgerCluster) checkNotListed(t *testing.T, id string, nodes ...string) {
	t.Helper()
	for _, name := range nodes {
		st, err := lc.procs[name].status()
		if err != nil {
			t.Fatal(err)
		}
		if listed(st, id) {
			t.Fatalf("%s's raft configuration lists %s: voters %v, non-voters %v", name, id, st.Voters, st.NonVoters)
		}
	}
}

// listed reports whether st's raft configuration lists id.
func listed(st admin.Status, id string) bool {
	for _, vs := range [][]admin.Voter{st.Voters, st.NonVoters} {
		for _, v := range vs {
			if v.ID == id {
				return true
			}
		}
	}
	return false
}
