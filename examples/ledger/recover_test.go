//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// TestRecoverLostQuorum is the operator procedure of docs/OPERATIONS.md
// for a lost quorum, on processes: three voters and an unchecked
// non-voter (-check-before-write=false) write to one SQLite file. The
// non-voter is paused (SIGSTOP: a zombie), then two voters are killed for
// good and their data dirs removed. The survivor cannot elect a leader;
// holdfastctl data recover refuses its data dir while it runs, and once it
// is stopped rewrites the configuration to it alone. Started again, it
// leads and owns every shard under a token larger than any before; the
// zombie, resumed, is fenced on every write; two new nodes join and are
// promoted: three voters again, and the audit of the whole file is clean.
func TestRecoverLostQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs six ledger processes")
	}
	t.Parallel()
	ctl := buildHoldfastctl(t)
	lc := newLedgerCluster(t, insecure)
	startVoters(t, lc, []string{"n1", "n2", "n3"}, map[string][]string{"n4": {"-check-before-write=false"}})
	lc.observeFrom(t, "n1")
	before := lc.tokensNow(t)
	lastBefore := mustStatus(t, lc.observer).LastToken
	zombie := lc.procs["n4"]
	lc.stopOutsideWrite(t, zombie)
	zombieShards := ownedBy(mustShards(t, lc.observer), "n4")
	for _, name := range []string{"n2", "n3"} {
		lc.crash(t, name)
		if err := os.RemoveAll(filepath.Join(lc.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	lost := time.Now()
	poll(t, "n1 to know no leader", 60*time.Second, func() error {
		if l := lc.observer.raftLeader(); l != "" {
			return notYet("leader %s", l)
		}
		return nil
	})
	dir := filepath.Join(lc.dir, "n1")
	if code, out := runCtl(t, ctl, "data", "recover", "-confirm", "n1", dir); code != 1 || !strings.Contains(out, "a node is running on") {
		t.Fatalf("recover on a running node: exit %d\n%s", code, out)
	}
	lc.crash(t, "n1")
	code, out := runCtl(t, ctl, "data", "peers", dir)
	if code != 0 || strings.Count(out, " voter ") != 3 {
		t.Fatalf("data peers: exit %d\n%s", code, out)
	}
	t.Logf("holdfastctl data peers %s:\n%s", dir, out)
	if code, out = runCtl(t, ctl, "data", "recover", "-confirm", "n1", dir); code != 0 {
		t.Fatalf("data recover: exit %d\n%s", code, out)
	}
	t.Logf("holdfastctl data recover:\n%s", out)

	restarted := time.Now()
	p := lc.start(t, "n1", lc.voterArgs("n1", 3)...)
	lc.observer = p
	p.waitReady(t, 60*time.Second)
	took := lc.waitServing(t, []string{"n1"}, before, restarted)
	st := mustStatus(t, p)
	t.Logf("quorum lost; recovered %v after the loss; n1 alone owns every shard with larger tokens %v after its start; last token %d → %d",
		restarted.Sub(lost).Round(time.Millisecond), took.Round(time.Millisecond), lastBefore, st.LastToken)
	if len(st.Voters) != 1 || st.Voters[0].Name != "n1" || st.LastToken <= lastBefore {
		t.Errorf("after recovery: voters %v, last token %d (was %d)", st.Voters, st.LastToken, lastBefore)
	}

	zombie.signal(t, syscall.SIGCONT)
	waitEvents(t, zombie, zombieShards, "rejected")
	for s, token := range zombieShards {
		n, fence := lc.rejections(t, "n4", s, token)
		if n == 0 || fence <= token || lc.staleAccepts(t, s, token) > 0 {
			t.Errorf("shard %d: the zombie's token %d: %d refusals (fence %d), %d stale writes accepted", s, token, n, fence, lc.staleAccepts(t, s, token))
		}
	}
	lc.crash(t, "n4")

	for _, name := range []string{"n5", "n6"} {
		lc.start(t, name, "-data", filepath.Join(lc.dir, name), "-join", p.gossipOf()).waitReady(t, 60*time.Second)
	}
	lc.waitHealthyVoters(t, 3)
	lc.waitSteady(t, "n1", "n5", "n6")
	if r := lc.rejectedBy(t); len(r) != 1 || r["n4"] == 0 {
		t.Errorf("fence refusals by node: %v, want the zombie's only", r)
	}
	lc.checkLedger(t)
}

// mustShards reads p's shard table.
func mustShards(t *testing.T, p *proc) admin.ShardList {
	t.Helper()
	l, err := p.shards()
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", p.name, err))
	}
	return l
}
