package storetest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// TestFirstBootDirectoriesSurvivePowerLoss (issue 23, finding 5): the
// directories a node's first boot creates (data dir, raft/, raft/wal) are
// synced into their parents before the log reports anything stored: a
// power cut losing every unsynced change keeps them and what is in them.
func TestFirstBootDirectoriesSurvivePowerLoss(t *testing.T) {
	mem := NewMemFS(0)
	open := walogOn(4096)
	s, err := open(mem)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorkload(rand.New(rand.NewPCG(1, 1)))
	m := NewModel()
	for _, op := range []StoreOp{w.batch(1), {Kind: OpSet, Key: "CurrentTerm", Val: []byte{0, 0, 0, 0, 0, 0, 0, 9}}} {
		if err := op.Do(s); err != nil {
			t.Fatal(err)
		}
		m = m.Apply(op)
	}
	crashed := mem.Crash(rand.New(rand.NewPCG(2, 2)), DropUnsynced)
	s2, err := open(crashed)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkNow(t, s2, m)
	s.Close()
}

// TestCompactionDoesNotStallReaders (issue 23, finding 5): while a
// compaction removes segment files and syncs the directory, reads of the
// log go on: no lock readers take is held across the removal.
func TestCompactionDoesNotStallReaders(t *testing.T) {
	ff := NewFaultFS(NewMemFS(0))
	s, err := walog.Open("/data/raft/wal", walog.Options{SegmentSize: 300, FS: ff})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := NewWorkload(rand.New(rand.NewPCG(3, 3)))
	for range 30 {
		last, _ := s.LastIndex()
		if err := s.StoreLogs(w.batch(last + 1).Logs); err != nil {
			t.Fatal(err)
		}
	}
	inRemove, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ff.SetRule(func(c Call) error {
		if c.Op == OpRemove {
			once.Do(func() {
				close(inRemove)
				<-release
			})
		}
		return nil
	})
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	released := false
	defer func() { // before s.Close (deferred earlier), which waits for the compaction
		if !released {
			close(release)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- s.DeleteRange(first, last-10) }()
	<-inRemove
	read := make(chan error, 1)
	go func() {
		var l raft.Log
		read <- s.GetLog(last, &l)
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("a read while the compaction removes a file: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a read waited for the compaction's file removal")
	}
	close(release)
	released = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
