package walog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/raft"
)

// Options configures Open.
type Options struct {
	// SegmentSize is the size past which a new segment file is started
	// (default 16 MiB). A segment can exceed it by one batch of entries.
	SegmentSize int64
}

// Log is a raft.LogStore and raft.StableStore in one directory (see the
// package doc). It is safe for concurrent use: raft appends from its main
// loop, compacts from its snapshot loop and reads from every replication
// goroutine.
type Log struct {
	dir     string
	segSize int64

	wmu sync.Mutex // serialises StoreLogs and DeleteRange
	buf []byte     // StoreLogs' encoding buffer, under wmu

	mu          sync.RWMutex // guards what follows; held shortly, never across a sync
	segs        []*segment   // in write order; the last takes appends
	first, last uint64       // 0, 0 when empty
	nextSeq     uint64
	closed      bool

	stable *stable
}

// segment is one segment file and where its entries start.
type segment struct {
	seq  uint64
	f    *os.File
	base uint64  // index of the first entry
	offs []int64 // offset of each entry's record
	size int64   // end of the last record
}

// lastIndex is the index of s's last entry (base-1 when empty).
func (s *segment) lastIndex() uint64 { return s.base + uint64(len(s.offs)) - 1 }

// Open opens the log in dir, creating dir if needed, and replays it (see
// the package doc for what recovery does with a torn last record).
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = 16 << 20
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st, err := openStable(filepath.Join(dir, stableFile))
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, segSize: opts.SegmentSize, stable: st, nextSeq: 1}
	if err := l.replay(); err != nil {
		l.closeFiles()
		return nil, err
	}
	return l, nil
}

// segName is the file name of segment seq.
func segName(seq uint64) string { return fmt.Sprintf("%020d.seg", seq) }

// replay opens every segment in order and rebuilds the index.
func (l *Log) replay() error {
	names, err := filepath.Glob(filepath.Join(l.dir, "*.seg"))
	if err != nil {
		return err
	}
	var seqs []uint64
	for _, name := range names {
		var seq uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "%020d.seg", &seq); err != nil || segName(seq) != filepath.Base(name) {
			return fmt.Errorf("walog: unexpected file %s", name)
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, seq := range seqs {
		if err := l.replaySegment(seq, i == len(seqs)-1); err != nil {
			return err
		}
		l.nextSeq = seq + 1
	}
	return nil
}

// replaySegment opens segment seq and indexes its records. In the last
// segment a bad record ends the log and is cut off; elsewhere it is an
// error.
func (l *Log) replaySegment(seq uint64, lastSeg bool) error {
	path := filepath.Join(l.dir, segName(seq))
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	s := &segment{seq: seq, f: f, base: l.last + 1}
	l.segs = append(l.segs, s)
	var scratch []byte
	for {
		payload, n, err := readRecord(f, s.size, scratch)
		var idx uint64
		if err == nil {
			idx, err = recordIndex(payload)
		}
		if err == nil && len(s.offs) == 0 && l.last == 0 {
			s.base = idx // the log's first entry
		}
		if err == nil && idx != s.base+uint64(len(s.offs)) {
			err = errBadRecord
		}
		if errors.Is(err, errBadRecord) {
			return l.endReplay(s, lastSeg)
		}
		if err != nil {
			return err
		}
		scratch = payload
		s.offs = append(s.offs, s.size)
		s.size += n
		if l.first == 0 {
			l.first = idx
		}
		l.last = idx
	}
}

// endReplay handles the end of segment s's good records: the end of the
// file, or a bad record.
func (l *Log) endReplay(s *segment, lastSeg bool) error {
	fi, err := s.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == s.size {
		return nil
	}
	if !lastSeg {
		return fmt.Errorf("walog: %s: bad record at offset %d of %d, and later segments follow", s.f.Name(), s.size, fi.Size())
	}
	return cutAfter(s, l.segSize)
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

// errClosed is returned by every method but Close after Close.
var errClosed = errors.New("walog: closed")

// errIfClosed returns errClosed after Close. Called with mu held.
func (l *Log) errIfClosed() error {
	if l.closed {
		return errClosed
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
	if index < l.first || index > l.last || l.first == 0 {
		return raft.ErrLogNotFound
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].lastIndex() >= index })
	if i == len(l.segs) || index < l.segs[i].base {
		return raft.ErrLogNotFound
	}
	s := l.segs[i]
	payload, _, err := readRecord(s.f, s.offs[index-s.base], nil)
	if err != nil {
		return fmt.Errorf("walog: reading entry %d: %w", index, err)
	}
	return decodeRecord(payload, out)
}

// Close closes the segment files. The log is unusable after.
func (l *Log) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	var first error
	for _, s := range l.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
