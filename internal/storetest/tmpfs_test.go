package storetest

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/holdfast-go/holdfast/internal/disktest"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// TestRealDiskFull: walog on a real 256 KiB tmpfs that fills up: an
// append the disk cannot take fails with ENOSPC and leaves the log as it
// was (live and after a restart); the term and the vote are still written
// (in place, no new space); once space is freed appends go on without a
// restart, and nothing acknowledged is lost. Needs root (CI runs it).
func TestRealDiskFull(t *testing.T) {
	root := disktest.Tmpfs(t, 256<<10)
	dir := filepath.Join(root, "raft", "wal")
	open := func() Store {
		l, err := walog.Open(dir, walog.Options{SegmentSize: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	s := open()
	defer func() { s.Close() }()
	w := NewWorkload(rand.New(rand.NewPCG(7, 7)))
	m := NewModel()
	fillerPath := filepath.Join(root, "filler")
	full := 0
	for round := 0; round < 3; round++ {
		// Fill the disk to the last byte with another file: the log goes
		// on in its preallocated segment, then needs a new one.
		filler, err := os.Create(fillerPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, err = filler.Write(make([]byte, 4096)); err == nil; _, err = filler.Write(make([]byte, 4096)) {
		}
		filler.Close()
		var failed error
		for i := 0; failed == nil && i < 10000; i++ {
			op := w.batch(m.Last + 1)
			if failed = op.Do(s); failed == nil {
				m = m.Apply(op)
			}
		}
		if !errors.Is(failed, ENOSPC) {
			t.Fatalf("round %d: appends on a full disk: %v, want ENOSPC", round, failed)
		}
		full++
		if f := s.(Failer).Failed(); f != nil {
			t.Fatalf("the full disk made the log refuse every write: %v", f)
		}
		checkNow(t, s, m)
		set := StoreOp{Kind: OpSet, Key: "CurrentTerm", Val: []byte{0, 0, 0, 0, 0, 0, 0, byte(round + 1)}}
		if err := set.Do(s); err != nil {
			t.Fatalf("the term could not be written on the full disk: %v", err)
		}
		m = m.Apply(set)
		if err := os.Remove(fillerPath); err != nil {
			t.Fatal(err)
		}
		op := w.batch(m.Last + 1)
		if err := op.Do(s); err != nil {
			t.Fatalf("an append once space was freed, without a restart: %v", err)
		}
		m = m.Apply(op)
		s.Close()
		s = open()
		checkNow(t, s, m)
		first, _ := s.FirstIndex()
		compact := StoreOp{Kind: OpDeletePrefix, Min: first, Max: m.Last - 1}
		if err := compact.Do(s); err != nil {
			t.Fatal(err)
		}
		m = m.Apply(compact)
	}
	if full < 3 {
		t.Fatalf("the disk filled %d times, want 3", full)
	}
	s.Close()
	s = open()
	checkNow(t, s, m)
}
