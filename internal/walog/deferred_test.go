package walog

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// syncFS is the OS file system with the segments' syncs counted, and
// failed while fail is set.
type syncFS struct {
	FS
	syncs atomic.Int64
	fail  atomic.Bool
}

type syncFile struct {
	File
	fs  *syncFS
	seg bool
}

func (s *syncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncFile{File: f, fs: s, seg: strings.HasSuffix(name, ".seg")}, nil
}

func (f syncFile) Sync() error {
	if !f.seg {
		return f.File.Sync()
	}
	if f.fs.fail.Load() {
		return errors.New("injected: sync failed")
	}
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

// deferringRig is a log on a syncFS that defers the sync of every append
// while deferring is set (it starts set), counting the wake-ups it sends.
type deferringRig struct {
	fsys      *syncFS
	deferring atomic.Bool
	wakes     atomic.Int64
}

func (r *deferringRig) open(t *testing.T, dir string) *Log {
	t.Helper()
	l, err := Open(dir, Options{FS: r.fsys, SegmentSize: 1 << 20,
		DeferSync: func([]*raft.Log) bool { return r.deferring.Load() },
		Deferred:  func() { r.wakes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newDeferringRig() *deferringRig {
	r := &deferringRig{fsys: &syncFS{FS: OSFS()}}
	r.deferring.Store(true)
	return r
}

func wantDurable(t *testing.T, l *Log, want uint64, when string) {
	t.Helper()
	if d := l.Durable(); d != want {
		t.Fatalf("%s: Durable %d, want %d", when, d, want)
	}
}

// TestDeferredAppendSyncedByTheNextWrite: an append whose sync is deferred
// returns written, not synced (Durable behind it, one wake-up); every
// later write (an append, a stable key, a deletion, Close) syncs it first,
// so at most the last batch is ever unsynced; a deletion brings Durable
// back with the log.
func TestDeferredAppendSyncedByTheNextWrite(t *testing.T) {
	dir := t.TempDir()
	rig := newDeferringRig()
	l := rig.open(t, dir)
	store(t, l, 1, 5)
	if n := rig.fsys.syncs.Load(); n != 1 { // the new segment's header
		t.Fatalf("%d segment syncs after a deferred append to a new log, want 1 (the header)", n)
	}
	wantDurable(t, l, 0, "a deferred append")
	if n := rig.wakes.Load(); n != 1 {
		t.Fatalf("%d wake-ups, want 1", n)
	}
	store(t, l, 6, 10)
	wantDurable(t, l, 5, "a second deferred append")
	if err := l.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	wantDurable(t, l, 10, "a stable key set")
	store(t, l, 11, 15)
	if err := l.DeleteRange(13, 15); err != nil {
		t.Fatal(err)
	}
	wantDurable(t, l, 12, "a suffix deleted")
	store(t, l, 13, 15)
	if err := l.SyncDeferred(); err != nil {
		t.Fatal(err)
	}
	wantDurable(t, l, 15, "SyncDeferred")
	if err := l.WaitDurable(15, nil); err != nil {
		t.Fatal(err)
	}
	rig.deferring.Store(false)
	store(t, l, 16, 20)
	wantDurable(t, l, 20, "an append that syncs")
	rig.deferring.Store(true)
	store(t, l, 21, 25)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, 1<<20)
	wantRange(t, l, 1, 25)
	wantDurable(t, l, 25, "reopened")
}

// TestWaitDurable: a wait returns once a sync covers its index, at once
// for an index already synced, ErrClosed when its stop closes, and
// ErrNotDurable once the log closes.
func TestWaitDurable(t *testing.T) {
	l := newDeferringRig().open(t, t.TempDir())
	store(t, l, 1, 5)
	got := make(chan error, 1)
	go func() { got <- l.WaitDurable(5, nil) }()
	if err := l.SyncDeferred(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a wait for a synced entry: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := l.WaitDurable(6, stop); !errors.Is(err, ErrClosed) {
		t.Fatalf("a wait whose stop closed: %v, want ErrClosed", err)
	}
	go func() { got <- l.WaitDurable(6, nil) }()
	l.Close()
	if err := <-got; !errors.Is(err, ErrNotDurable) {
		t.Fatalf("a wait past the end of a closed log: %v, want ErrNotDurable", err)
	}
}

// TestFailedDeferredSyncRefusesWrites: a deferred sync that fails cannot
// be undone (the caller took the entries as stored): the log refuses every
// write after it, Durable stays behind the entries, and a wait for them
// fails; a reopened log shows the entries whole or cut as a torn batch.
func TestFailedDeferredSyncRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	rig := newDeferringRig()
	fsys := rig.fsys
	l := rig.open(t, dir)
	store(t, l, 1, 5)
	if err := l.SyncDeferred(); err != nil {
		t.Fatal(err)
	}
	store(t, l, 6, 10)
	fsys.fail.Store(true)
	if err := l.SyncDeferred(); err == nil {
		t.Fatal("a failed sync returned no error")
	}
	fsys.fail.Store(false)
	if l.Failed() == nil {
		t.Fatal("the log takes writes after a failed deferred sync")
	}
	if err := l.StoreLogs(entries(11, 11)); err == nil {
		t.Fatal("an append after a failed deferred sync succeeded")
	}
	wantDurable(t, l, 5, "a failed sync")
	if err := l.WaitDurable(10, nil); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("a wait for entries whose sync failed: %v, want ErrNotDurable", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, 1<<20)
	if last, _ := l.LastIndex(); last != 5 && last != 10 {
		t.Fatalf("reopened, the log ends at %d, want 5 or 10", last)
	}
}
