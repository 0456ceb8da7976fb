package raftnode

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The stable keys raft writes.
var (
	keyCurrentTerm  = []byte("CurrentTerm")
	keyLastVoteTerm = []byte("LastVoteTerm")
	keyLastVoteCand = []byte("LastVoteCand")
)

// storeGuard sits between raft and the stores on disk, so that a failing
// disk never takes the host down and never makes raft believe something
// that is not on disk:
//
//   - raft panics when the current term cannot be saved; the guard retries
//     the write instead (raft's main loop waits, as on a paused node: the
//     node answers nothing and the others go on) until it succeeds or the
//     node stops, when the waiting goroutine ends without returning
//     (runtime.Goexit), so that raft is never told the term is saved.
//   - raft saves a vote as two keys, the term and then the candidate; the
//     guard clears the candidate before a new vote term is written, so a
//     failure between the two never pairs the new term with an old
//     candidate (which raft would take for a vote already given).
//   - a node whose log cannot take appends does not vote for itself (it
//     would win, fail its first append, step down, again and again).
//   - raft leaves its last index where it was when a suffix deletion
//     succeeded and the append after it failed (a follower is then stuck
//     until it restarts); the guard shows raft the deleted entries, from
//     memory, until raft deletes them again or an append succeeds.
//
// It records every error in the node's storage health and metrics.
type storeGuard struct {
	logs   raft.LogStore
	stable raft.StableStore
	health *healthBook
	self   []byte        // this node's vote for itself
	stop   chan struct{} // closed once raft's shutdown has begun
	log    *slog.Logger
	probe  func() error // checks appends can take space again (nil: none)

	mu       sync.Mutex
	deleted  []*raft.Log // the last suffix deleted, while an append may follow
	showDead bool        // an append after it failed: raft still believes in it
}

// maxShadow bounds the deleted suffix the guard keeps in memory.
const maxShadow = 4096

func newStoreGuard(logs raft.LogStore, stable raft.StableStore, health *healthBook, log *slog.Logger) *storeGuard {
	return &storeGuard{logs: logs, stable: stable, health: health, log: log, stop: make(chan struct{})}
}

// shutdown ends a term write waiting for the disk (see storeGuard).
func (g *storeGuard) shutdown() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
}

// FirstIndex is the store's.
func (g *storeGuard) FirstIndex() (uint64, error) { return g.logs.FirstIndex() }

// LastIndex is the store's, or the deleted suffix's end while raft
// still believes in it.
func (g *storeGuard) LastIndex() (uint64, error) {
	g.mu.Lock()
	if g.showDead {
		last := g.deleted[len(g.deleted)-1].Index
		g.mu.Unlock()
		return last, nil
	}
	g.mu.Unlock()
	return g.logs.LastIndex()
}

// GetLog reads the store, or the deleted suffix while raft still
// believes in it.
func (g *storeGuard) GetLog(index uint64, out *raft.Log) error {
	g.mu.Lock()
	if g.showDead && index >= g.deleted[0].Index && index <= g.deleted[len(g.deleted)-1].Index {
		*out = *g.deleted[index-g.deleted[0].Index]
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	return g.logs.GetLog(index, out)
}

// StoreLog appends one entry (StoreLogs).
func (g *storeGuard) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries and records the outcome.
func (g *storeGuard) StoreLogs(logs []*raft.Log) error {
	err := g.logs.StoreLogs(logs)
	g.health.record("append", err)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil:
		g.deleted, g.showDead = nil, false
	case len(g.deleted) > 0 && len(logs) > 0 && logs[0].Index == g.deleted[0].Index && !g.showDead:
		g.showDead = true
		g.log.Warn("an append after a suffix deletion failed: showing raft the deleted entries until it deletes them again",
			"from", g.deleted[0].Index, "to", g.deleted[len(g.deleted)-1].Index)
	}
	return err
}

// DeleteRange deletes entries, keeping a deleted suffix in memory until
// an append succeeds (see storeGuard).
func (g *storeGuard) DeleteRange(min, max uint64) error {
	g.mu.Lock()
	if g.showDead && min >= g.deleted[0].Index {
		// Raft deletes again what it still believed in: it is gone already.
		g.deleted, g.showDead = nil, false
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	var deleted []*raft.Log
	last, err := g.logs.LastIndex()
	if first, ferr := g.logs.FirstIndex(); err == nil && ferr == nil && min > first && max >= last && last-min < maxShadow {
		deleted = g.read(min, last)
	}
	err = g.logs.DeleteRange(min, max)
	g.health.record("delete", err)
	g.mu.Lock()
	if err == nil {
		g.deleted, g.showDead = deleted, false
	}
	g.mu.Unlock()
	return err
}

// read returns entries from..to, or nil if one cannot be read.
func (g *storeGuard) read(from, to uint64) []*raft.Log {
	out := make([]*raft.Log, 0, to-from+1)
	for i := from; i <= to; i++ {
		l := new(raft.Log)
		if err := g.logs.GetLog(i, l); err != nil {
			return nil
		}
		out = append(out, l)
	}
	return out
}

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore).
func (g *storeGuard) IsMonotonic() bool {
	m, ok := g.logs.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// Get reads a stable key.
func (g *storeGuard) Get(key []byte) ([]byte, error) { return g.stable.Get(key) }

// GetUint64 reads a stable key holding a number.
func (g *storeGuard) GetUint64(key []byte) (uint64, error) { return g.stable.GetUint64(key) }

// Set writes a stable key; a vote for itself is refused while appends
// fail (canStand).
func (g *storeGuard) Set(key, val []byte) error {
	if bytes.Equal(key, keyLastVoteCand) && g.self != nil && bytes.Equal(val, g.self) {
		if err := g.canStand(); err != nil {
			return err
		}
	}
	err := g.stable.Set(key, val)
	g.health.record("stable", err)
	return err
}

// SetUint64 writes a stable key holding a number: nothing when it holds
// the value already; the term until it is on disk (saveTerm); a new vote
// term after clearing the old candidate.
func (g *storeGuard) SetUint64(key []byte, val uint64) error {
	if old, err := g.stable.GetUint64(key); err == nil && old == val {
		return nil // saved already (raft rewrites the term it read at start)
	}
	switch {
	case bytes.Equal(key, keyCurrentTerm):
		return g.saveTerm(val)
	case bytes.Equal(key, keyLastVoteTerm):
		if cand, err := g.stable.Get(keyLastVoteCand); err == nil && len(cand) > 0 {
			if err := g.Set(keyLastVoteCand, nil); err != nil {
				return err
			}
		}
	}
	err := g.stable.SetUint64(key, val)
	g.health.record("stable", err)
	return err
}

// saveTerm writes the current term, retrying until it is on disk; if the
// node stops first, the calling goroutine (raft's main loop, the only
// writer of the term) ends there, raft never told the term was saved.
func (g *storeGuard) saveTerm(term uint64) error {
	backoff := 10 * time.Millisecond
	for {
		err := g.stable.SetUint64(keyCurrentTerm, term)
		g.health.record("stable", err)
		if err == nil {
			return nil
		}
		if backoff == 10*time.Millisecond {
			g.log.Error("cannot save the raft term; raft waits until it is on disk", "term", term, "error", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-g.stop:
			t.Stop()
			g.log.Warn("the node stops while the raft term is not on disk", "term", term)
			runtime.Goexit()
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// canStand returns an error while this node's log cannot take appends and
// the disk (probe) shows no room for them. A store without a probe (bbolt)
// always stands: refusing for good would leave a single voter that once
// failed an append without a leader.
func (g *storeGuard) canStand() error {
	err := g.health.appendFailing()
	if err == nil || g.probe == nil {
		return nil
	}
	if perr := g.probe(); perr == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", errNotStanding, err)
}
