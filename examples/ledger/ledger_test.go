//go:build linux

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// The cluster under test: four ledger processes on loopback sharing one
// SQLite file. n1, n2 and n3 are raft voters that bootstrap together; n4
// is a raft non-voter started with -check-before-write=false, so pausing it
// or killing it never touches the quorum. n1 is never faulted: every read
// of the shard table goes to its admin endpoint.
const (
	testTTL      = 2 * time.Second
	testShards   = 8
	testDrain    = time.Second
	testInterval = 50 * time.Millisecond // the ledger's default -interval
)

// testGrace is the ExpiryGrace the nodes run with.
var testGrace = clusterConfig(options{ttl: testTTL}).Session.ExpiryGrace

func TestLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs four processes through SIGSTOP, SIGKILL and SIGTERM")
	}
	t.Parallel()
	lc := startLedgerCluster(t)
	for _, step := range []struct {
		name string
		run  func(*testing.T, *ledgerCluster)
	}{
		{"SIGSTOP/unchecked owner is fenced", testUncheckedZombie},
		{"SIGSTOP/checked owner stops itself", testCheckedZombie},
		{"SIGKILL/shards re-owned", testKilledOwner},
		{"shards move/fenced handoff", testOperatorMove},
		{"SIGTERM/graceful handoff", testGracefulHandoff},
	} {
		if !t.Run(step.name, func(t *testing.T) { step.run(t, lc) }) {
			return
		}
	}
	lc.checkLedger(t)
}

// ledgerCluster is the running cluster and the test's handles on the file.
type ledgerCluster struct {
	bin, dir, dbPath string
	procs            map[string]*proc
	observer         *proc   // n1
	db               *sql.DB // reads
	probe            *sql.DB // one connection: can it take the write lock?
	// security returns node name's security flags (certificates or
	// -insecure) and the HTTPS client of its admin endpoint (nil: HTTP).
	security func(name string) ([]string, *http.Client)
	held     map[string]*portHold // the ports of crashed nodes, until they restart
}

func startLedgerCluster(t *testing.T) *ledgerCluster {
	lc := newLedgerCluster(t, func(string) ([]string, *http.Client) { return []string{"-insecure"}, nil })

	start := time.Now()
	voter := func(name string) []string {
		return []string{"-data", filepath.Join(lc.dir, name), "-expect", "3"}
	}
	lc.observer = lc.start(t, "n1", voter("n1")...)
	join := lc.observer.waitListening(t, 30*time.Second).kv["gossip"]
	checkNotReadyAlone(t, lc.observer)
	lc.start(t, "n2", append(voter("n2"), "-join", join)...)
	lc.start(t, "n3", append(voter("n3"), "-join", join)...)
	lc.start(t, "n4", "-join", join, "-check-before-write=false")
	for _, name := range []string{"n1", "n2", "n3", "n4"} {
		lc.procs[name].waitReady(t, 30*time.Second)
	}
	lc.waitSteady(t, "n1", "n2", "n3", "n4")
	t.Logf("4 nodes started; every shard owned and written to after %v", time.Since(start).Round(time.Millisecond))
	return lc
}

// checkNotReadyAlone checks that p, one of three expected nodes and
// alone, has printed no ready line and reports its formation progress.
func checkNotReadyAlone(t *testing.T, p *proc) {
	t.Helper()
	var st admin.Status
	poll(t, p.name+" formation progress", 30*time.Second, func() error {
		var err error
		if st, err = p.status(); err != nil {
			return err
		}
		if !strings.HasPrefix(st.Formation.Progress, "bootstrap: 1 of 3") {
			return notYet("formation %+v", st.Formation)
		}
		return nil
	})
	// Alone, p cannot be ready: any ready line so far is a false one.
	if evs := p.out.events("ready"); len(evs) > 0 || st.Ready {
		t.Errorf("%s, alone, printed %d ready lines; status ready=%v, formation %q", p.name, len(evs), st.Ready, st.Formation.Progress)
	}
}

// newLedgerCluster builds the binary and opens the shared file; nodes are
// started with the flags security returns for them.
func newLedgerCluster(t *testing.T, security func(name string) ([]string, *http.Client)) *ledgerCluster {
	lc := &ledgerCluster{bin: buildLedger(t), dir: t.TempDir(), procs: map[string]*proc{}, security: security}
	lc.dbPath = filepath.Join(lc.dir, "ledger.db")
	lc.db = openTestDB(t, lc.dbPath, 10000)
	lc.probe = openTestDB(t, lc.dbPath, 500)
	lc.probe.SetMaxOpenConns(1)
	return lc
}

func openTestDB(t *testing.T, path string, busyMillis int) *sql.DB {
	db, err := openDB(path, busyMillis)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (lc *ledgerCluster) start(t *testing.T, name string, args ...string) *proc {
	sec, client := lc.security(name)
	p := startProc(t, lc.bin, name, lc.args(append(sec, args...)...)...)
	p.admin = client
	lc.procs[name] = p
	return p
}

// args is every ledger command line the tests run, after -node: the flags
// common to all nodes, then extra. Add a flag every test node needs here.
func (lc *ledgerCluster) args(extra ...string) []string {
	common := []string{"-db", lc.dbPath, "-ttl", testTTL.String(), "-shards", strconv.Itoa(testShards),
		"-drain", testDrain.String(), "-interval", testInterval.String()}
	return append(common, extra...)
}

// stableFor is how long the shard table must stay unchanged before
// waitSteady trusts it: longer than the leader's replanning period
// (ReconcileInterval, 500ms in the local profile), so no rebalancing move
// is about to start.
const stableFor = time.Second

// waitSteady waits until every shard is owned (none free or revoking),
// every owner has written under its grant (the shard's fence is its
// token), each of owners owns at least one shard, and the table has not
// changed for stableFor. It returns the table.
func (lc *ledgerCluster) waitSteady(t *testing.T, owners ...string) admin.ShardList {
	t.Helper()
	var list admin.ShardList
	var waited error // the last reason to wait, logged if it took long
	start := time.Now()
	var version uint64
	var since time.Time // when version was first seen
	poll(t, fmt.Sprintf("a steady table, every shard written to, %v owning some", owners), 60*time.Second, func() error {
		l, err := lc.steadyNow(owners)
		if err == nil && l.Version != version {
			version, since = l.Version, time.Now()
		}
		if err == nil && time.Since(since) < stableFor {
			err = notYet("table version %d unchanged for %v", version, time.Since(since).Round(time.Millisecond))
		}
		waited, list = err, l
		return err
	})
	if d := time.Since(start); d > stableFor+2*time.Second {
		t.Logf("waited %v for a steady table; last waiting on: %v", d.Round(time.Millisecond), waited)
	}
	return list
}

// steadyNow checks waitSteady's conditions but stability once.
func (lc *ledgerCluster) steadyNow(owners []string) (admin.ShardList, error) {
	for _, name := range owners {
		if err := lc.procs[name].alive(); err != nil {
			return admin.ShardList{}, err
		}
	}
	l, err := lc.observer.shards()
	if err != nil {
		return l, notYet("%v", err)
	}
	count := map[string]int{}
	for _, r := range l.Shards {
		if r.State != "owned" {
			return l, notYet("shard %d is %s", r.Shard, r.State)
		}
		count[r.Owner]++
		if f, err := lc.fence(r.Shard); err != nil || f != r.Token {
			return l, notYet("shard %d: fence %d (%v), token %d", r.Shard, f, err, r.Token)
		}
	}
	for _, name := range owners {
		if count[name] == 0 {
			return l, notYet("%s owns no shard: %v", name, count)
		}
	}
	return l, nil
}

// fence reads a shard's fence: the highest token the ledger accepted.
func (lc *ledgerCluster) fence(shard uint32) (uint64, error) {
	var f int64
	err := lc.db.QueryRow("SELECT fence FROM shards WHERE shard = ?", shard).Scan(&f)
	return uint64(f), err
}

// waitReowned waits until every shard of old (shard → token) is owned by
// a node other than from, with a larger token, and returns the rows and
// the time since since.
func (lc *ledgerCluster) waitReowned(t *testing.T, old map[uint32]uint64, from string, since time.Time) (map[uint32]admin.ShardRow, time.Duration) {
	t.Helper()
	rows := map[uint32]admin.ShardRow{}
	var took time.Duration
	poll(t, fmt.Sprintf("%s's shards re-owned", from), 30*time.Second, func() error {
		list, err := lc.observer.shards()
		if err != nil {
			return notYet("%v", err)
		}
		now := time.Now()
		for s, token := range old {
			r := shardRow(list, s)
			if r.State != "owned" || r.Owner == from || r.Token <= token {
				return notYet("shard %d: %s by %s, token %d (was %d)", s, r.State, r.Owner, r.Token, token)
			}
			rows[s] = r
		}
		took = now.Sub(since)
		return nil
	})
	return rows, took
}

// checkLedger audits the whole file as the auditor does, in one read
// transaction, and checks that every recorded audit found nothing.
func (lc *ledgerCluster) checkLedger(t *testing.T) {
	ctx := context.Background()
	tx, err := lc.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var st auditState
	r, err := st.scan(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	var audits, bad, auditors, rejected int
	if err := tx.QueryRow("SELECT count(*), count(DISTINCT token), coalesce(sum(violations > 0), 0) FROM audits").
		Scan(&audits, &auditors, &bad); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow("SELECT count(*) FROM rejected").Scan(&rejected); err != nil {
		t.Fatal(err)
	}
	t.Logf("the ledger: %d accepted writes, %d rejected; %d audits recorded under %d auditor grants",
		r.rows, rejected, audits, auditors)
	if r.violations > 0 {
		t.Errorf("the ledger breaks its invariants %d times; first: %s", r.violations, r.problem)
	}
	if audits == 0 || bad > 0 {
		t.Errorf("%d audits recorded, %d with violations; want some, none", audits, bad)
	}
	if err := tx.Commit(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		t.Fatal(err)
	}
}

// shardRow returns shard s's row of list (a zero row if it is missing).
func shardRow(list admin.ShardList, s uint32) admin.ShardRow {
	for _, r := range list.Shards {
		if r.Shard == s {
			return r
		}
	}
	return admin.ShardRow{}
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
