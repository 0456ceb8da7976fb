//go:build linux

// TestLedger's SIGSTOP steps: owners paused past their TTL (zombies), one
// that never checks its lease and one that does, and the helpers that
// pause an owner and count what the fence refused or let through.

package main

import (
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// stopOutsideWrite stops p with SIGSTOP at a moment it does not hold the
// database's write lock (a process stopped holding it would block every
// writer, the new owner included: SQLite has no row locks), and returns
// when it was stopped.
func (lc *ledgerCluster) stopOutsideWrite(t *testing.T, p *proc) time.Time {
	t.Helper()
	return lc.stopOutsideWriteAfter(t, p, nil)
}

// stopOutsideWriteAfter is stopOutsideWrite calling before (if not nil)
// just before each SIGSTOP; an error from it is a reason to try again.
func (lc *ledgerCluster) stopOutsideWriteAfter(t *testing.T, p *proc, before func() error) time.Time {
	t.Helper()
	var stopped time.Time
	poll(t, p.name+" stopped outside a write transaction", 30*time.Second, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		if before != nil {
			if err := before(); err != nil {
				return notYet("before stopping %s: %v", p.name, err)
			}
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
	stopped, old := lc.stopOwner(t, p)
	po := pausedOwner{old: old, leader: lc.observer.raftLeader()}
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

// stopOwner stops p as stopOutsideWrite does and returns when, with the
// shards it owned then (ownedAtStop); it fails the test if p owned none.
func (lc *ledgerCluster) stopOwner(t *testing.T, p *proc) (time.Time, map[uint32]uint64) {
	t.Helper()
	var before admin.ShardList
	stopped := lc.stopOutsideWriteAfter(t, p, func() (err error) {
		before, err = lc.observer.shards()
		return err
	})
	after, err := lc.observer.shards()
	if err != nil {
		t.Fatal(err)
	}
	owned := ownedAtStop(before, after, p.name)
	if len(owned) == 0 {
		t.Fatalf("%s owns no shard once stopped (just before: %v; after: %v)", p.name, ownedBy(before, p.name), ownedBy(after, p.name))
	}
	return stopped, owned
}

// ownedAtStop returns the shards node owned when it was stopped, with their
// tokens: those it owned just before the SIGSTOP (before) that after, read
// once it was stopped, shows still its own under the same token, free
// since that grant, or owned by another under a larger token. The list read
// after the stop alone can miss them: on a loaded machine that read may
// come after the stopped node's session expired and its shards moved on.
func ownedAtStop(before, after admin.ShardList, node string) map[uint32]uint64 {
	now := map[uint32]admin.ShardRow{}
	for _, r := range after.Shards {
		now[r.Shard] = r
	}
	out := map[uint32]uint64{}
	for s, token := range ownedBy(before, node) {
		r, ok := now[s]
		switch {
		case !ok:
		case r.Owner == node && r.Token == token, r.Owner == "" && r.Token >= token, r.Owner != node && r.Token > token:
			out[s] = token
		}
	}
	return out
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
