package walog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/raft"
)

// Options configures Open.
type Options struct {
	// SegmentSize is the size past which a new segment file is started
	// (default 16 MiB); each segment file is preallocated to it. A segment
	// can exceed it by one batch of entries.
	SegmentSize int64
	// FS is the file system (nil: OSFS()).
	FS FS
	// ReadOnly opens the log without repairing or writing anything (what
	// Open would repair is listed by Repairs); every write fails.
	ReadOnly bool
	// Note, if set, receives one line for each repair Open makes and for
	// each failure a call did not return (a leftover file that could not be
	// removed): op names the operation ("recover", "remove"), err is nil
	// for a repair.
	Note func(op, msg string, err error)
	// DeferSync, if set, is asked at each StoreLogs whether that call may
	// return once its entries are written, before they are synced (a raft
	// leader's appends: see the package doc). Such a batch is synced by
	// SyncDeferred, or by the next call that writes, whichever comes first,
	// so at most the last batch is ever unsynced; Durable tells what is on
	// disk. Deferred, if set, is called after each such StoreLogs (to wake
	// whoever calls SyncDeferred).
	DeferSync func(logs []*raft.Log) bool
	Deferred  func()
}

// Log is a raft.LogStore and raft.StableStore in one directory (see the
// package doc). It is safe for concurrent use: raft appends from its main
// loop, compacts from its snapshot loop and reads from every replication
// goroutine.
type Log struct {
	dir      string
	fs       FS
	segSize  int64
	readOnly bool
	note     func(op, msg string, err error)
	repairs  []string // what a read-only Open would have repaired

	wmu       sync.Mutex  // serialises every write
	buf       []byte      // StoreLogs' encoding buffer, under wmu
	st        *stateStore // the state file, written under wmu
	failed    error       // set under wmu and mu: a failure that could not be undone
	leftovers []string    // under wmu: deleted segments' files still to remove
	dur       durability  // deferred syncs (deferred.go)

	mu          sync.RWMutex // guards what follows; held shortly, never across a sync
	segs        []*segment   // in order; the last takes appends
	first, last uint64       // 0, 0 when empty
	cutting     uint64       // entries from here on are being deleted (0: none)
	kv          map[string][]byte
	closed      bool
}

// Open opens the log in dir, creating dir if needed, and replays it; see
// the package doc for what it recovers and what it refuses (with a
// *CorruptError naming the file and the offset, having changed nothing).
func Open(dir string, opts Options) (*Log, error) {
	switch {
	case opts.SegmentSize <= 0:
		opts.SegmentSize = 16 << 20
	case opts.SegmentSize <= segHeaderSize:
		opts.SegmentSize = segHeaderSize + 1 // room for an entry: an empty segment is never full
	}
	if opts.FS == nil {
		opts.FS = OSFS()
	}
	l := &Log{dir: filepath.Clean(dir), fs: opts.FS, segSize: opts.SegmentSize, readOnly: opts.ReadOnly, note: opts.Note}
	if !l.readOnly {
		if err := MkdirAll(l.fs, l.dir); err != nil {
			return nil, err
		}
	}
	if err := l.load(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if !l.readOnly {
		if err := l.syncOpened(); err != nil {
			l.closeFiles()
			return nil, err
		}
	}
	l.setDurable(l.last)
	if !l.readOnly {
		l.dur.decide, l.dur.deferred = opts.DeferSync, opts.Deferred
	}
	return l, nil
}

// notef reports a repair Open made (or, read-only, would make).
func (l *Log) notef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.readOnly {
		l.repairs = append(l.repairs, msg)
		return
	}
	if l.note != nil {
		l.note("recover", msg, nil)
	}
}

// Repairs lists what Open would have repaired had it not been read-only
// (a torn tail to cut, leftover files to remove): none for a log closed
// cleanly.
func (l *Log) Repairs() []string { return append([]string(nil), l.repairs...) }

// load reads the directory: the state file, the segments it lists, and
// replays them.
func (l *Log) load() error {
	d, err := l.scanDir()
	if err != nil {
		return err
	}
	if err := l.loadState(d); err != nil {
		return err
	}
	seqs, err := l.liveSegments(d.segs)
	if err != nil {
		return err
	}
	if err := l.replay(seqs); err != nil {
		return err
	}
	if !l.readOnly {
		if err := l.st.heal(); err != nil {
			return err
		}
	}
	l.kv = l.st.cur.kv
	return nil
}

// dirList is what the directory holds, by kind.
type dirList struct {
	segs     []uint64
	state    bool
	v1Stable bool
}

// scanDir lists the directory, refusing files this log did not write.
func (l *Log) scanDir() (dirList, error) {
	var d dirList
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return d, fmt.Errorf("walog: %w", err)
	}
	for _, name := range names {
		var seq uint64
		switch {
		case name == stateFile:
			d.state = true
		case name == v1StableFile:
			d.v1Stable = true
		case name == stateFile+".tmp", name == v1StableFile+".tmp":
			l.removeLeftover(filepath.Join(l.dir, name), "an unfinished write of the state file")
		case isBroken(name):
		case name == "wal-meta.db" || filepath.Ext(name) == ".wal":
			return d, corrupt(filepath.Join(l.dir, name), -1, "this directory holds a hashicorp/raft-wal log (written by holdfast builds before the format of this log); this build cannot read it")
		default:
			if _, err := fmt.Sscanf(name, "%020d.seg", &seq); err != nil || segName(seq) != name || seq == 0 {
				return d, corrupt(filepath.Join(l.dir, name), -1, "a file this log did not write is in its directory; move it away if it is yours")
			}
			d.segs = append(d.segs, seq)
		}
	}
	sort.Slice(d.segs, func(i, j int) bool { return d.segs[i] < d.segs[j] })
	return d, nil
}

// isBroken reports a copy kept by a repair (NAME.broken or NAME.broken.N).
func isBroken(name string) bool {
	ext := filepath.Ext(name)
	if ext == ".broken" {
		return true
	}
	var n int
	base := name[:len(name)-len(ext)]
	_, err := fmt.Sscanf(ext, ".%d", &n)
	return err == nil && filepath.Ext(base) == ".broken"
}

// liveSegments checks the segment files against the state file's list:
// every listed one must be there; files before it (a compaction's, not
// yet removed) are removed, files after it (a segment being created or a
// suffix being deleted at a crash) are moved aside.
func (l *Log) liveSegments(found []uint64) ([]uint64, error) {
	cur := l.st.cur
	var live []uint64
	for _, seq := range found {
		path := filepath.Join(l.dir, segName(seq))
		switch {
		case seq < cur.first:
			l.removeLeftover(path, "a segment a compaction deleted")
		case seq >= cur.next:
			if err := l.setAside(seq, path); err != nil {
				return nil, err
			}
		default:
			live = append(live, seq)
		}
	}
	for i, seq := 0, cur.first; seq < cur.next; i, seq = i+1, seq+1 {
		if i >= len(live) || live[i] != seq {
			return nil, corrupt(filepath.Join(l.dir, segName(seq)), -1,
				"the segment is missing: the state file lists segments %d to %d, and the log has a hole without it", cur.first, cur.next-1)
		}
	}
	return live, nil
}

// replay opens the live segments in order and rebuilds the index.
func (l *Log) replay(seqs []uint64) error {
	var prevTerm uint64
	for i, seq := range seqs {
		s, err := l.openSegment(seq, i == 0)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		if err := l.replaySegment(s, i == 0, i == len(seqs)-1, prevTerm); err != nil {
			return err
		}
		if len(s.offs) > 0 {
			prevTerm = s.lastTerm
			if l.first == 0 {
				l.first = s.base
			}
			l.last = s.lastIndex()
		}
	}
	return nil
}

// replaySegment indexes s's records. A bad record in the last segment may
// be a torn last write (examineTail); anywhere else it is corruption.
func (l *Log) replaySegment(s *segment, firstSeg, lastSeg bool, prevTerm uint64) error {
	size := s.alloc
	if s.format == format2 {
		if err := s.readSegHeader(l.st.cur.logID, size); err != nil {
			return err
		}
		s.size = segHeaderSize
	} else if !firstSeg {
		s.base = l.last + 1
	}
	if !firstSeg && s.base != l.last+1 {
		return corrupt(s.path, 0, "the segment starts at entry %d, the one before it ends at entry %d", s.base, l.last)
	}
	st, err := s.scan(size, prevTerm, firstSeg && s.format == format1)
	if err != nil {
		return err
	}
	if st.off < size {
		if !lastSeg {
			return corrupt(s.path, st.off, "%s, in a segment that later segments follow", st.reason)
		}
		t, err := s.examineTail(st, size)
		if err != nil {
			return err
		}
		if t.nonZero > t.off {
			if l.readOnly {
				l.notef("would cut the torn tail of %s at offset %d (%d bytes after entry %d), keeping a copy", s.name(), t.off, t.nonZero-t.off, s.lastIndex())
			} else if err := l.cutTail(s, t, size); err != nil {
				return err
			}
		}
	}
	s.sealed = !lastSeg || s.format == format1
	if lastSeg && s.format == format1 && size > s.size {
		return l.sealLegacy(s)
	}
	return nil
}

// FirstIndex returns the first index in the log, 0 when it is empty.
func (l *Log) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.first, l.errIfClosed()
}

// LastIndex returns the last index in the log, 0 when it is empty.
func (l *Log) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.last, l.errIfClosed()
}

// IsMonotonic tells raft that the log takes no gaps: raft then deletes the
// whole log after restoring a snapshot.
func (l *Log) IsMonotonic() bool { return true }

// ErrClosed is returned by every method but Close after Close.
var ErrClosed = errors.New("walog: closed")

// errIfClosed returns ErrClosed after Close. Called with mu held.
func (l *Log) errIfClosed() error {
	if l.closed {
		return ErrClosed
	}
	return nil
}

// GetLog reads entry index into out; raft.ErrLogNotFound if the log does
// not hold it.
func (l *Log) GetLog(index uint64, out *raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.errIfClosed(); err != nil {
		return err
	}
	if l.first == 0 || index < l.first || index > l.last || l.cutting != 0 && index >= l.cutting {
		return raft.ErrLogNotFound
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].lastIndex() >= index })
	if i == len(l.segs) || index < l.segs[i].base {
		return raft.ErrLogNotFound
	}
	s := l.segs[i]
	k := index - s.base
	end := s.size
	if k+1 < uint64(len(s.offs)) {
		end = s.offs[k+1]
	}
	payload, _, err := readRecord(s.f, s.offs[k], end, nil)
	if err == nil {
		err = decodeRecord(payload, s.format, out)
	}
	if err == nil && out.Index != index {
		err = errBadRecord
	}
	if err != nil {
		return fmt.Errorf("walog: reading entry %d from %s: %w", index, s.name(), err)
	}
	return nil
}

// Close syncs a batch whose sync was deferred, then closes the files. The
// log is unusable after.
func (l *Log) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil
	}
	var first error
	if l.failed == nil {
		first = l.flushLocked()
	}
	l.endDurability(ErrClosed)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if err := l.closeFiles(); first == nil {
		first = err
	}
	return first
}

func (l *Log) closeFiles() error {
	var first error
	for _, s := range l.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	if l.st != nil && l.st.f != nil {
		if err := l.st.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
