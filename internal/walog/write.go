package walog

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/atomicfile"
)

// StoreLog appends one entry (see StoreLogs).
func (l *Log) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

// StoreLogs appends entries, which must have consecutive indexes starting
// right after the last one (anywhere when the log is empty), and returns
// once they are on disk.
func (l *Log) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.RLock()
	closed, last := l.closed, l.last
	l.mu.RUnlock()
	if closed {
		return errClosed
	}
	for i, e := range logs {
		if (last != 0 || i > 0) && e.Index != last+1 {
			return fmt.Errorf("walog: entry %d does not follow %d", e.Index, last)
		}
		last = e.Index
	}
	s, fresh, err := l.activeSegment()
	if err != nil {
		return err
	}
	buf := l.buf[:0]
	offs := make([]int64, 0, len(logs))
	for _, e := range logs {
		offs = append(offs, s.size+int64(len(buf)))
		buf = appendRecord(buf, e)
	}
	l.buf = buf
	if _, err := s.f.WriteAt(buf, s.size); err != nil {
		return fmt.Errorf("walog: writing %s: %w", s.f.Name(), err)
	}
	if err := syncData(s.f); err != nil {
		return fmt.Errorf("walog: syncing %s: %w", s.f.Name(), err)
	}
	if fresh {
		if err := syncDir(l.dir); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(s.offs) == 0 {
		s.base = logs[0].Index
	}
	s.offs = append(s.offs, offs...)
	s.size += int64(len(buf))
	if l.first == 0 {
		l.first = logs[0].Index
	}
	l.last = last
	return nil
}

// activeSegment returns the segment that takes the next append, starting a
// new one when there is none or the last has grown past the segment size;
// fresh reports a new file, whose directory entry still needs a sync.
// Called with wmu held.
func (l *Log) activeSegment() (s *segment, fresh bool, err error) {
	l.mu.RLock()
	var full *segment
	if n := len(l.segs); n > 0 && l.segs[n-1].size < l.segSize {
		s = l.segs[n-1]
	} else if n > 0 {
		full = l.segs[n-1]
	}
	seq, base := l.nextSeq, l.last+1
	l.mu.RUnlock()
	if s != nil {
		return s, false, nil
	}
	if full != nil {
		// Drop the full segment's preallocated tail before a segment follows
		// it: only the last segment may end in zeros.
		if err := full.f.Truncate(full.size); err != nil {
			return nil, false, fmt.Errorf("walog: sealing %s: %w", full.f.Name(), err)
		}
		if err := full.f.Sync(); err != nil {
			return nil, false, fmt.Errorf("walog: sealing %s: %w", full.f.Name(), err)
		}
	}
	f, err := os.OpenFile(filepath.Join(l.dir, segName(seq)), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("walog: new segment: %w", err)
	}
	preallocate(f, l.segSize)
	s = &segment{seq: seq, f: f, base: base}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.nextSeq = seq + 1
	l.mu.Unlock()
	return s, true, nil
}

// DeleteRange deletes entries min to max, a prefix or a suffix of the log
// (or all of it). See the package doc for what reaches the disk when.
func (l *Log) DeleteRange(min, max uint64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.errIfClosed(); err != nil {
		return err
	}
	if l.first == 0 || max < l.first || min > l.last || min > max {
		return nil
	}
	switch {
	case min <= l.first && max >= l.last:
		return l.dropSegments()
	case min <= l.first:
		return l.deletePrefix(max)
	case max >= l.last:
		return l.deleteSuffix(min)
	}
	return fmt.Errorf("walog: DeleteRange(%d, %d) is inside the log %d..%d", min, max, l.first, l.last)
}

// deletePrefix drops entries up to max: segments that hold only such
// entries are deleted; a partly covered one stays on disk. Called with mu
// held.
func (l *Log) deletePrefix(max uint64) error {
	keep := 0
	for keep < len(l.segs)-1 && l.segs[keep].lastIndex() <= max {
		keep++
	}
	l.first = max + 1
	return l.removeFiles(l.segs[:keep], func() { l.segs = l.segs[keep:] })
}

// deleteSuffix drops entries from min on: later segments are deleted and
// the one holding min-1 is cut after it and synced. Called with mu held.
func (l *Log) deleteSuffix(min uint64) error {
	cut := len(l.segs) - 1
	for cut > 0 && l.segs[cut].base >= min {
		cut--
	}
	s := l.segs[cut]
	if err := l.removeFiles(l.segs[cut+1:], func() { l.segs = l.segs[:cut+1] }); err != nil {
		return err
	}
	if n := min - s.base; n < uint64(len(s.offs)) {
		s.size, s.offs = s.offs[n], s.offs[:n]
	}
	l.last = min - 1
	return cutAfter(s, l.segSize)
}

// cutAfter truncates the last segment s after its last record, syncs it,
// and preallocates it again: bytes past the log's end must read as zeros,
// never as stale records.
func cutAfter(s *segment, segSize int64) error {
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("walog: truncating %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("walog: syncing %s: %w", s.f.Name(), err)
	}
	preallocate(s.f, segSize)
	return nil
}

// dropSegments deletes every segment: the log is empty, and the next
// append starts a new segment at any index. Called with mu held.
func (l *Log) dropSegments() error {
	return l.removeFiles(l.segs, func() { l.segs, l.first, l.last = nil, 0, 0 })
}

// removeFiles closes and deletes segs' files, then applies forget and syncs
// the directory.
func (l *Log) removeFiles(segs []*segment, forget func()) error {
	for _, s := range segs {
		s.f.Close()
		if err := os.Remove(s.f.Name()); err != nil {
			return fmt.Errorf("walog: deleting a segment: %w", err)
		}
	}
	forget()
	if len(segs) == 0 {
		return nil
	}
	return syncDir(l.dir)
}

// syncDir syncs dir, so that created and deleted segments last.
func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("walog: syncing %s: %w", dir, err)
	}
	return nil
}
