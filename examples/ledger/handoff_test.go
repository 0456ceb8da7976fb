//go:build linux

// TestLedger's exit steps: an owner killed with SIGKILL (its shards
// re-owned within the bound) and one stopped with SIGTERM (a graceful
// handoff), and the helpers that time the handoff and the writes' gap.

package main

import (
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

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
