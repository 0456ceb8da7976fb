package raftnode

import (
	"bytes"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// failingStore is an in-memory log and stable store whose writes fail
// while fail is set.
type failingStore struct {
	*raft.InmemStore
	failLogs, failStable atomic.Bool
	stableWrites         atomic.Int64
}

var errDisk = syscall.ENOSPC

func newFailingStore() *failingStore { return &failingStore{InmemStore: raft.NewInmemStore()} }

func (f *failingStore) StoreLogs(logs []*raft.Log) error {
	if f.failLogs.Load() {
		return errDisk
	}
	return f.InmemStore.StoreLogs(logs)
}

func (f *failingStore) StoreLog(l *raft.Log) error { return f.StoreLogs([]*raft.Log{l}) }

func (f *failingStore) Set(k, v []byte) error {
	if f.failStable.Load() {
		return errDisk
	}
	f.stableWrites.Add(1)
	return f.InmemStore.Set(k, v)
}

func (f *failingStore) SetUint64(k []byte, v uint64) error {
	if f.failStable.Load() {
		return errDisk
	}
	f.stableWrites.Add(1)
	return f.InmemStore.SetUint64(k, v)
}

func newTestGuard(f *failingStore) (*storeGuard, *healthBook, map[string]int) {
	counts := map[string]int{}
	var mu sync.Mutex
	h := newHealthBook(nil, func(op string) { mu.Lock(); counts[op]++; mu.Unlock() })
	return newStoreGuard(f, f, h, slog.New(slog.DiscardHandler)), h, counts
}

// TestTermWriteWaitsForTheDisk: a term that cannot be saved is retried
// (raft would panic on the error) until the disk takes it; the storage
// health says so meanwhile; a term already saved is not written again.
func TestTermWriteWaitsForTheDisk(t *testing.T) {
	f := newFailingStore()
	g, h, counts := newTestGuard(f)
	if err := g.SetUint64(keyCurrentTerm, 3); err != nil {
		t.Fatal(err)
	}
	writes := f.stableWrites.Load()
	if err := g.SetUint64(keyCurrentTerm, 3); err != nil || f.stableWrites.Load() != writes {
		t.Fatalf("saving the term already saved: %v, %d writes", err, f.stableWrites.Load()-writes)
	}
	f.failStable.Store(true)
	done := make(chan error, 1)
	go func() { done <- g.SetUint64(keyCurrentTerm, 4) }()
	deadline := time.Now().Add(time.Minute)
	for !h.health().Failing {
		if time.Now().After(deadline) {
			t.Fatal("the failing term write never showed in the storage health")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the term write returned (%v) while the disk refused it", err)
	default:
	}
	if hs := h.health(); hs.Op != "stable" || !hs.Failing {
		t.Fatalf("health %+v, want stable failing", hs)
	}
	f.failStable.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if term, _ := f.GetUint64(keyCurrentTerm); term != 4 || h.health().Failing || counts["stable"] == 0 {
		t.Fatalf("term %d, health %+v, counted %v", term, h.health(), counts)
	}
}

// TestTermWriteEndsAtShutdown: a term write that never reaches the disk
// ends its goroutine when the node stops, without returning: raft is never
// told the term is saved, and its shutdown is not held up.
func TestTermWriteEndsAtShutdown(t *testing.T) {
	f := newFailingStore()
	g, _, _ := newTestGuard(f)
	f.failStable.Store(true)
	var returned atomic.Bool
	ended := make(chan struct{})
	go func() {
		defer close(ended) // runs on runtime.Goexit too
		g.SetUint64(keyCurrentTerm, 9)
		returned.Store(true)
	}()
	g.shutdown()
	<-ended
	if returned.Load() {
		t.Fatal("the term write returned at shutdown: raft would take the term as saved")
	}
}

// TestVoteTermClearsTheCandidate: raft saves a vote as a term then a
// candidate; the candidate of an earlier vote is cleared first, so that a
// failure between the two writes never leaves the new term paired with
// the old candidate (raft would grant that candidate again unchecked).
func TestVoteTermClearsTheCandidate(t *testing.T) {
	f := newFailingStore()
	g, _, _ := newTestGuard(f)
	if err := g.SetUint64(keyLastVoteTerm, 5); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(keyLastVoteCand, []byte("node-a")); err != nil {
		t.Fatal(err)
	}
	if err := g.SetUint64(keyLastVoteTerm, 6); err != nil {
		t.Fatal(err)
	}
	f.failStable.Store(true)
	if err := g.Set(keyLastVoteCand, []byte("node-b")); err == nil {
		t.Fatal("a vote was saved on a failing disk")
	}
	cand, _ := f.Get(keyLastVoteCand)
	term, _ := f.GetUint64(keyLastVoteTerm)
	if term != 6 || len(cand) != 0 {
		t.Fatalf("after the failed vote: term %d with candidate %q; want term 6 with no candidate", term, cand)
	}
}

// TestNoSelfVoteWhileAppendsFail: while this node's log cannot take
// appends and the disk shows no room, it does not vote for itself (it
// would lead, fail and step down again and again); it still votes for
// others; once an append succeeds, or the disk shows room again, it stands
// again. A store with no way to show room (bbolt) always stands.
func TestNoSelfVoteWhileAppendsFail(t *testing.T) {
	f := newFailingStore()
	g, _, _ := newTestGuard(f)
	g.self = []byte("self-addr")
	var full error = errDisk
	g.probe = func() error { return full }
	f.failLogs.Store(true)
	if err := g.StoreLogs(testLogs(1, 1)); err == nil {
		t.Fatal("an append on a failing disk succeeded")
	}
	if err := g.Set(keyLastVoteCand, []byte("self-addr")); !errors.Is(err, errNotStanding) {
		t.Fatalf("a vote for itself while appends fail: %v, want errNotStanding", err)
	}
	if err := g.Set(keyLastVoteCand, []byte("other")); err != nil {
		t.Fatalf("a vote for another node while appends fail: %v", err)
	}
	full = nil
	if err := g.Set(keyLastVoteCand, []byte("self-addr")); err != nil {
		t.Fatalf("a vote for itself once the disk has room: %v", err)
	}
	full = errDisk
	f.failLogs.Store(false)
	if err := g.StoreLogs(testLogs(1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(keyLastVoteCand, []byte("self-addr")); err != nil {
		t.Fatalf("a vote for itself once appends succeed: %v", err)
	}
	f.failLogs.Store(true)
	g.StoreLogs(testLogs(2, 2))
	g.probe = nil
	if err := g.Set(keyLastVoteCand, []byte("self-addr")); err != nil {
		t.Fatalf("a store without a probe refused a vote for itself: %v", err)
	}
}

// TestDeletedSuffixShownAfterAFailedAppend: raft keeps its last index
// when a suffix deletion succeeded and the append after it failed; the
// guard shows raft the deleted entries until raft deletes them again (and
// then appends), so the follower is not stuck until a restart.
func TestDeletedSuffixShownAfterAFailedAppend(t *testing.T) {
	f := newFailingStore()
	g, _, _ := newTestGuard(f)
	if err := g.StoreLogs(testLogs(1, 20)); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	newer := testLogs(15, 16)
	for _, l := range newer {
		l.Term = 2
	}
	f.failLogs.Store(true)
	if err := g.StoreLogs(newer); err == nil {
		t.Fatal("an append on a failing disk succeeded")
	}
	var l raft.Log
	if last, _ := g.LastIndex(); last != 20 || g.GetLog(18, &l) != nil || l.Term != 1 {
		t.Fatalf("after the failed append: last %d, entry 18 term %d; want what raft believes: 20, term 1", last, l.Term)
	}
	f.failLogs.Store(false)
	if err := g.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	if last, _ := g.LastIndex(); last != 14 {
		t.Fatalf("raft deleted the suffix again: last %d, want 14", last)
	}
	if err := g.StoreLogs(newer); err != nil {
		t.Fatal(err)
	}
	if last, _ := g.LastIndex(); last != 16 || g.GetLog(16, &l) != nil || l.Term != 2 || !bytes.Equal(l.Data, newer[1].Data) {
		t.Fatalf("after the append: last %d, entry 16 %+v", last, l)
	}
}
