//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/internal/disktest"
)

// TestFullDiskVoter: three voters, n3's data dir on a small tmpfs that is
// filled while the cluster runs (every node churns a named lease, so the
// raft log takes entries steadily). n3 must stay up and say why it stopped
// acknowledging (its status, metrics and probes); n1 and n2 keep every
// shard owned and written; the ledger's audit finds no stale write. Once
// the space is freed n3 catches up and is a healthy voter owning shards
// again, without a restart. Needs root for the tmpfs (CI runs it).
func TestFullDiskVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes, one on a tmpfs it fills")
	}
	t.Parallel()
	fullDir := disktest.Tmpfs(t, 2<<20)
	lc := newLedgerCluster(t, func(string) ([]string, *http.Client) { return []string{"-insecure"}, nil })
	voter := func(name, dir string) []string {
		return []string{"-data", dir, "-expect", "3", "-raft-segment-size", "65536", "-churn", "20ms"}
	}
	lc.observer = lc.start(t, "n1", voter("n1", filepath.Join(lc.dir, "n1"))...)
	join := lc.observer.waitListening(t, 30*time.Second).kv["gossip"]
	lc.start(t, "n2", append(voter("n2", filepath.Join(lc.dir, "n2")), "-join", join)...)
	n3 := lc.start(t, "n3", append(voter("n3", filepath.Join(fullDir, "n3")), "-join", join)...)
	for _, name := range []string{"n1", "n2", "n3"} {
		lc.procs[name].waitReady(t, 30*time.Second)
	}
	lc.waitSteady(t, "n1", "n2", "n3")

	filled := time.Now()
	fillDisk(t, filepath.Join(fullDir, "filler"))
	st := waitStorageFailing(t, n3)
	t.Logf("n3 reported its storage failing %v after the disk was filled: %s", time.Since(filled).Round(time.Millisecond), st.Storage.Line)
	checkProbeLine(t, n3, "raft storage: failing")

	// The others keep every shard owned and written; n3 owns none.
	poll(t, "n1 and n2 owning every shard, n3 none", 60*time.Second, func() error {
		l, err := lc.steadyNow([]string{"n1", "n2"})
		if err != nil {
			return err
		}
		if n := len(ownedBy(l, "n3")); n > 0 {
			return notYet("n3 still owns %d shards", n)
		}
		return nil
	})
	lc.waitSteady(t, "n1", "n2")
	if err := n3.alive(); err != nil {
		t.Fatalf("the full disk took n3's process down: %v", err)
	}
	if st, err := n3.status(); err != nil || st.Storage.OK || st.Session != nil {
		t.Fatalf("n3 on its full disk: storage %+v, session %+v (%v); want failing, none", st.Storage, st.Session, err)
	}
	metricAtLeast(t, n3, `holdfast_storage_errors_total{op="append"}`, 1)

	freed := time.Now()
	if err := os.Remove(filepath.Join(fullDir, "filler")); err != nil {
		t.Fatal(err)
	}
	lc.waitHealthyAgain(t, n3)
	t.Logf("n3 was a healthy voter owning shards again %v after the space was freed, without a restart", time.Since(freed).Round(time.Millisecond))
	if b, _ := os.ReadFile(n3.errLog); strings.Contains(string(b), "panic:") {
		t.Error("n3 logged a panic")
	}
	lc.checkLedger(t)
}

// waitStorageFailing waits until p reports its raft storage failing for a
// full disk, and returns its status.
func waitStorageFailing(t *testing.T, p *proc) admin.Status {
	t.Helper()
	var st admin.Status
	poll(t, p.name+" to report its raft storage failing", 60*time.Second, func() error {
		var err error
		if st, err = p.status(); err != nil {
			return notYet("%v", err)
		}
		if st.Storage.OK {
			return notYet("%s's storage still ok", p.name)
		}
		return nil
	})
	if !strings.Contains(st.Storage.Error, "no space left on device") || st.Storage.Line == "" {
		t.Errorf("%s's storage row names no full disk: %+v", p.name, st.Storage)
	}
	return st
}

// waitHealthyAgain waits until p's storage is fine, the leader (as the
// observer sees it) judges it a healthy voter, its replica has caught up,
// and it owns shards again in a steady table.
func (lc *ledgerCluster) waitHealthyAgain(t *testing.T, p *proc) {
	t.Helper()
	poll(t, p.name+" a healthy voter owning shards again", 90*time.Second, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		st, err := p.status()
		if err != nil {
			return notYet("%v", err)
		}
		if !st.Storage.OK {
			return notYet("%s's storage: %s", p.name, st.Storage.Line)
		}
		obs, err := lc.observer.status()
		if err != nil {
			return notYet("%v", err)
		}
		for _, v := range obs.Voters {
			if v.Name == p.name && (v.Healthy == nil || !*v.Healthy) {
				return notYet("the leader does not judge %s healthy", p.name)
			}
		}
		if obs.AppliedIndex > st.AppliedIndex+64 {
			return notYet("%s applied %d, %s %d", p.name, st.AppliedIndex, lc.observer.name, obs.AppliedIndex)
		}
		_, err = lc.steadyNow([]string{"n1", "n2", p.name})
		return err
	})
}

// fillDisk writes path until the file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// checkProbeLine checks that p's verbose liveness probe carries want.
func checkProbeLine(t *testing.T, p *proc, want string) {
	t.Helper()
	resp, err := p.get("/healthz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for n, err := resp.Body.Read(buf); n > 0 || err == nil; n, err = resp.Body.Read(buf) {
		b.Write(buf[:n])
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), want) {
		t.Errorf("%s /healthz?verbose: %s %q, want 200 with %q", p.name, resp.Status, b.String(), want)
	}
}

// metricAtLeast checks that p's /metrics shows series at least min.
func metricAtLeast(t *testing.T, p *proc, series string, min float64) {
	t.Helper()
	resp, err := p.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for n, err := resp.Body.Read(buf); n > 0 || err == nil; n, err = resp.Body.Read(buf) {
		b.Write(buf[:n])
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil && f >= min {
				return
			}
			t.Errorf("%s: %s is %s, want at least %v", p.name, series, v, min)
			return
		}
	}
	t.Errorf("%s: no series %s in /metrics", p.name, series)
}
