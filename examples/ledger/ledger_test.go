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
	"syscall"
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

// stopOutsideWrite stops p with SIGSTOP at a moment it does not hold the
// database's write lock (a process stopped holding it would block every
// writer, the new owner included: SQLite has no row locks), and returns
// when it was stopped.
func (lc *ledgerCluster) stopOutsideWrite(t *testing.T, p *proc) time.Time {
	t.Helper()
	var stopped time.Time
	poll(t, p.name+" stopped outside a write transaction", 30*time.Second, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		stopped = time.Now()
		p.signal(t, syscall.SIGSTOP)
		for st, err := p.state(); st != "T"; st, err = p.state() {
			if err != nil {
				return err
			}
			if time.Since(stopped) > 5*time.Second {
				return fmt.Errorf("%s not stopped 5s after SIGSTOP: state %s", p.name, st)
			}
			time.Sleep(time.Millisecond)
		}
		tx, err := lc.probe.Begin()
		if err == nil {
			return tx.Rollback()
		}
		p.signal(t, syscall.SIGCONT)
		return notYet("the write lock stayed taken while %s was stopped: %v", p.name, err)
	})
	return stopped
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

// pausedOwner is what pauseOwner saw.
type pausedOwner struct {
	old     map[uint32]uint64 // the stopped node's shards and tokens
	now     map[uint32]admin.ShardRow
	reowned time.Duration // from SIGSTOP until the table showed every shard re-owned
	paused  time.Duration
	leader  string // the raft leader when p was stopped
}

// pauseOwner stops p for at least 3 × TTL, and until every one of its
// shards is owned by another node that has written under its new token,
// then lets it continue.
func (lc *ledgerCluster) pauseOwner(t *testing.T, p *proc) pausedOwner {
	t.Helper()
	lc.waitSteady(t, "n1", "n2", "n3", "n4")
	stopped := lc.stopOutsideWrite(t, p)
	list, err := lc.observer.shards()
	if err != nil {
		t.Fatal(err)
	}
	po := pausedOwner{old: ownedBy(list, p.name), leader: lc.observer.raftLeader()}
	if len(po.old) == 0 {
		t.Fatalf("%s owns no shard once stopped", p.name)
	}
	po.now, po.reowned = lc.waitReowned(t, po.old, p.name, stopped)
	time.Sleep(time.Until(stopped.Add(3 * testTTL))) // the fault schedule
	poll(t, "the new owners' first writes", 30*time.Second, func() error {
		for s, row := range po.now {
			if f, err := lc.fence(s); err != nil || f < row.Token {
				return notYet("shard %d: fence %d (%v), new token %d", s, f, err, row.Token)
			}
		}
		return nil
	})
	p.signal(t, syscall.SIGCONT)
	po.paused = time.Since(stopped)
	t.Logf("%s stopped %v (raft leader: %s); its shards %v were re-owned %v after SIGSTOP (TTL %v, grace %v)",
		p.name, po.paused.Round(time.Millisecond), po.leader, po.old, po.reowned.Round(time.Millisecond), testTTL, testGrace)
	return po
}

// waitEvents waits until p has printed each of names for every shard of
// old with its old token.
func waitEvents(t *testing.T, p *proc, old map[uint32]uint64, names ...string) {
	t.Helper()
	poll(t, fmt.Sprintf("%s to print %v for %v", p.name, names, old), 20*time.Second, func() error {
		for s, token := range old {
			for _, name := range names {
				if !p.out.has(name, map[string]string{"shard": fmt.Sprint(s), "token": fmt.Sprint(token)}) {
					return notYet("no %q for shard %d token %d", name, s, token)
				}
			}
		}
		return nil
	})
}

// staleAccepts counts the writes accepted under token on shard after the
// first write under a larger token.
func (lc *ledgerCluster) staleAccepts(t *testing.T, shard uint32, token uint64) int {
	t.Helper()
	var n int
	err := lc.db.QueryRow(`SELECT count(*) FROM writes WHERE shard = ?1 AND token = ?2
		AND seq > (SELECT min(seq) FROM writes WHERE shard = ?1 AND token > ?2)`, shard, token).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rejections returns how many writes of node under token on shard the
// fence refused, and the lowest fence they met.
func (lc *ledgerCluster) rejections(t *testing.T, node string, shard uint32, token uint64) (n int, fence uint64) {
	t.Helper()
	var f sql.NullInt64
	err := lc.db.QueryRow("SELECT count(*), min(fence) FROM rejected WHERE node = ? AND shard = ? AND token = ?",
		node, shard, token).Scan(&n, &f)
	if err != nil {
		t.Fatal(err)
	}
	return n, uint64(f.Int64)
}

// testUncheckedZombie: n4 never checks its lease before writing. Paused
// past its TTL, it resumes believing it owns its shards and writes: the
// fence refuses every such write, and none lands after the new owner's.
func testUncheckedZombie(t *testing.T, lc *ledgerCluster) {
	z := lc.procs["n4"]
	po := lc.pauseOwner(t, z)
	waitEvents(t, z, po.old, "rejected", "lost")
	for _, s := range sortedKeys(po.old) {
		token, row := po.old[s], po.now[s]
		n, fence := lc.rejections(t, z.name, s, token)
		stale := lc.staleAccepts(t, s, token)
		t.Logf("shard %d: %s token %d → %s token %d; zombie writes rejected: %d (fence %d); stale writes accepted after the new owner's first: %d",
			s, z.name, token, row.Owner, row.Token, n, fence, stale)
		if n == 0 || fence < row.Token {
			t.Errorf("shard %d: %d rejected writes of token %d recorded, fence %d; want ≥ 1 with fence ≥ %d", s, n, token, fence, row.Token)
		}
		if stale > 0 {
			t.Errorf("shard %d: %d writes with the stale token %d accepted after the new owner's first write", s, stale, token)
		}
	}
}

// testCheckedZombie: n3 checks its lease inside each write transaction.
// Paused past its TTL, it resumes and its check fails before any write: no
// stale write reaches the fence at all.
func testCheckedZombie(t *testing.T, lc *ledgerCluster) {
	z := lc.procs["n3"]
	po := lc.pauseOwner(t, z)
	waitEvents(t, z, po.old, "check-failed", "lost")
	for _, s := range sortedKeys(po.old) {
		token, row := po.old[s], po.now[s]
		n, _ := lc.rejections(t, z.name, s, token)
		stale := lc.staleAccepts(t, s, token)
		t.Logf("shard %d: %s token %d → %s token %d; check failed before writing; rejected: %d; stale accepted: %d",
			s, z.name, token, row.Owner, row.Token, n, stale)
		if n > 0 || stale > 0 {
			t.Errorf("shard %d: the checked zombie reached the fence: %d rejected, %d stale accepted", s, n, stale)
		}
	}
}

// testKilledOwner: SIGKILL n2; every shard it owned is owned by another
// node under a larger token within TTL + ExpiryGrace + 2s. When n2 led, its
// session's deadline runs from the next leader's takeover (a new leader
// gives every session TTL + ExpiryGrace from then), and the 2s allow 1s for
// the election: an election that took longer (a host starving the
// processes, elections timing out again and again) moves the bound by as
// much, and the test says so.
func testKilledOwner(t *testing.T, lc *ledgerCluster) {
	p := lc.procs["n2"]
	old := ownedBy(lc.waitSteady(t, "n1", "n2", "n3", "n4"), p.name)
	leader := lc.observer.raftLeader()
	killed := time.Now()
	p.signal(t, syscall.SIGKILL)
	elected := lc.observer.leaderElected(killed, func(l string) bool { return l == p.name })
	rows, took := lc.waitReowned(t, old, p.name, killed)
	bound := testTTL + testGrace + 2*time.Second
	if e := <-elected; e > time.Second {
		bound += e - time.Second
		t.Logf("the next leader took office %v after the kill, 1s allowed: the bound moves to %v", e.Round(time.Millisecond), bound)
	}
	t.Logf("SIGKILL %s (raft leader: %s) → its %d shards re-owned after %v (bound %v)",
		p.name, leader, len(old), took.Round(time.Millisecond), bound)
	for _, s := range sortedKeys(old) {
		t.Logf("shard %d: %s token %d → %s token %d", s, p.name, old[s], rows[s].Owner, rows[s].Token)
	}
	if took > bound {
		t.Errorf("re-owned %v after SIGKILL, want at most %v", took, bound)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not reaped 10s after SIGKILL", p.name)
	}
}

// testGracefulHandoff: SIGTERM n4; it hands each shard off (its worker
// stops, then the release commits) and exits 0; no shard stays unowned for
// longer than its drain plus a second.
func testGracefulHandoff(t *testing.T, lc *ledgerCluster) {
	p := lc.procs["n4"]
	old := ownedBy(lc.waitSteady(t, "n1", "n3", "n4"), p.name)
	term := time.Now()
	p.signal(t, syscall.SIGTERM)
	free, rows := lc.watchHandoff(t, old, p.name)
	handoff := time.Since(term)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30s after SIGTERM", p.name)
	}
	exited := time.Since(term)
	if p.waitErr != nil {
		t.Errorf("%s after SIGTERM: %v, want exit status 0", p.name, p.waitErr)
	}
	t.Logf("SIGTERM %s → its %d shards handed off after %v; the process exited after %v",
		p.name, len(old), handoff.Round(time.Millisecond), exited.Round(time.Millisecond))
	waitEvents(t, p, old, "released")
	bound := testDrain + time.Second
	for _, s := range sortedKeys(old) {
		gap := lc.writeGap(t, s, old[s], rows[s].Token)
		t.Logf("shard %d: %s token %d → %s token %d; free for %v as polled every 20ms; writes gap %v (%v beyond one interval); bound %v",
			s, p.name, old[s], rows[s].Owner, rows[s].Token, free[s], gap.Round(time.Millisecond),
			(gap - testInterval).Round(time.Millisecond), bound)
		if free[s] > bound || gap-testInterval > bound {
			t.Errorf("shard %d unowned too long: free %v, writes gap %v; want at most %v", s, free[s], gap, bound)
		}
	}
	if !p.out.has("stopped", map[string]string{"node": p.name}) {
		t.Errorf("%s did not print its stopped line", p.name)
	}
}

// watchHandoff polls the table every 20ms until every shard of old is owned
// by another node with a larger token; it returns, per shard, the longest
// time it was seen free, and the new rows.
func (lc *ledgerCluster) watchHandoff(t *testing.T, old map[uint32]uint64, from string) (map[uint32]time.Duration, map[uint32]admin.ShardRow) {
	t.Helper()
	free := map[uint32]time.Duration{}
	freeSince := map[uint32]time.Time{}
	rows := map[uint32]admin.ShardRow{}
	poll(t, from+"'s shards handed off", 30*time.Second, func() error {
		list, err := lc.observer.shards()
		if err != nil {
			return notYet("%v", err)
		}
		now := time.Now()
		for s, token := range old {
			if _, done := rows[s]; done {
				continue
			}
			r := shardRow(list, s)
			if r.State == "free" && freeSince[s].IsZero() {
				freeSince[s] = now
			}
			if r.State == "owned" && r.Owner != from && r.Token > token {
				rows[s] = r
				if !freeSince[s].IsZero() {
					free[s] = now.Sub(freeSince[s])
				}
			}
		}
		if len(rows) < len(old) {
			return notYet("%d of %d shards handed off", len(rows), len(old))
		}
		return nil
	})
	return free, rows
}

// writeGap waits for the first write under newToken on shard and returns
// the time between the last write under oldToken and it, by the writers'
// clocks (one machine, one clock).
func (lc *ledgerCluster) writeGap(t *testing.T, shard uint32, oldToken, newToken uint64) time.Duration {
	t.Helper()
	var last, first sql.NullInt64
	poll(t, fmt.Sprintf("a write to shard %d under token %d", shard, newToken), 10*time.Second, func() error {
		err := lc.db.QueryRow(`SELECT (SELECT max(at) FROM writes WHERE shard = ?1 AND token = ?2),
			(SELECT min(at) FROM writes WHERE shard = ?1 AND token = ?3)`, shard, oldToken, newToken).Scan(&last, &first)
		switch {
		case err != nil:
			return err
		case !last.Valid:
			return fmt.Errorf("no write to shard %d under token %d", shard, oldToken)
		case !first.Valid:
			return notYet("no write under token %d yet", newToken)
		}
		return nil
	})
	return time.Duration(first.Int64 - last.Int64)
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
