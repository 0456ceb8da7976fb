package walog

import (
	"fmt"
	"path/filepath"
)

// DeleteRange deletes entries min to max, a prefix or a suffix of the log
// (or all of it). See the package doc for what reaches the disk when.
func (l *Log) DeleteRange(min, max uint64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	l.retryLeftovers()
	l.mu.RLock()
	first, last := l.first, l.last
	l.mu.RUnlock()
	if first == 0 || max < first || min > last || min > max {
		return nil
	}
	switch {
	case min <= first && max >= last:
		defer l.lowerDurable(min - 1)
		return l.dropSegments()
	case min <= first:
		return l.deletePrefix(max)
	case max >= last:
		defer l.lowerDurable(min - 1)
		return l.deleteSuffix(min)
	}
	return fmt.Errorf("walog: DeleteRange(%d, %d) is inside the log %d..%d", min, max, first, last)
}

// deletePrefix drops entries up to max: segments that hold only such
// entries leave the state file's list, then the log, then the disk; a
// partly covered one stays on disk. Called with wmu held.
func (l *Log) deletePrefix(max uint64) error {
	l.mu.RLock()
	keep := 0
	for keep < len(l.segs)-1 && l.segs[keep].lastIndex() <= max {
		keep++
	}
	l.mu.RUnlock()
	if keep > 0 {
		next := l.st.cur.clone()
		next.first = l.segs[keep].seq
		if err := l.writeState(next); err != nil {
			return err
		}
	}
	l.mu.Lock()
	gone := l.segs[:keep:keep]
	l.segs = append([]*segment(nil), l.segs[keep:]...)
	l.first = max + 1
	l.mu.Unlock()
	l.removeSegments(gone)
	return nil
}

// deleteSuffix drops entries from min on, from disk before the log shows
// them gone: later segments leave the state file's list and the disk, and
// the segment holding min-1 is cut after it and synced. While it
// works, reads of those entries find nothing. A failure after the state
// file changed makes every later write fail. Called with wmu held.
func (l *Log) deleteSuffix(min uint64) error {
	l.mu.Lock()
	cut := len(l.segs) - 1
	for cut > 0 && l.segs[cut].base >= min {
		cut--
	}
	s, later := l.segs[cut], l.segs[cut+1:]
	l.cutting = min
	l.mu.Unlock()
	if len(later) > 0 {
		next := l.st.cur.clone()
		next.next = s.seq + 1
		if err := l.writeState(next); err != nil {
			if l.failed == nil {
				l.mu.Lock()
				l.cutting = 0
				l.mu.Unlock()
			}
			return err
		}
		l.mu.Lock()
		l.segs = l.segs[:cut+1]
		l.mu.Unlock()
		l.removeSegments(later)
	}
	keep := min - s.base
	size := s.size
	if keep < uint64(len(s.offs)) {
		size = s.offs[keep]
		if err := l.clearFrom(s, size); err != nil {
			return l.poison(fmt.Errorf("walog: deleting entries %d on: %w: the log refuses every write until it is reopened", min, err))
		}
	} else {
		keep = uint64(len(s.offs))
	}
	l.mu.Lock()
	s.offs, s.size = s.offs[:keep], size
	s.sealed = s.format == format1
	l.last, l.cutting = min-1, 0
	l.mu.Unlock()
	return nil
}

// clearFrom removes s's records from off on: the file is cut there and
// synced (a change of size a crash keeps whole or not at all, where a
// zeroing could survive in part and leave records that look like a later
// batch), then its space reserved again for the appends that follow (a
// full disk leaves it unreserved: appends then grow the file).
func (l *Log) clearFrom(s *segment, off int64) error {
	if err := s.f.Truncate(off); err != nil {
		return fmt.Errorf("truncating %s: %w", s.path, err)
	}
	s.alloc = off
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", s.path, err)
	}
	if s.format == format2 && !s.sealed && l.segSize > off {
		if err := s.f.Allocate(off, l.segSize-off); err == nil {
			s.alloc = l.segSize
		}
	}
	return nil
}

// dropSegments deletes every segment: the state file lists none, the log
// is empty, and the next append starts a new segment at any index. Called
// with wmu held.
func (l *Log) dropSegments() error {
	next := l.st.cur.clone()
	next.first = next.next
	if err := l.writeState(next); err != nil {
		return err
	}
	l.mu.Lock()
	gone := l.segs
	l.segs, l.first, l.last = nil, 0, 0
	l.mu.Unlock()
	l.removeSegments(gone)
	return nil
}

// removeSegments closes and removes the files of segments no longer in
// the log (nor in the state file's list), then syncs the directory. A file
// that cannot be removed is noted and retried at the next DeleteRange (and
// at the next open): the log is right without it gone. Called with wmu
// held, not mu: readers go on meanwhile.
func (l *Log) removeSegments(gone []*segment) {
	for _, s := range gone {
		s.f.Close()
		l.leftovers = append(l.leftovers, s.path)
	}
	l.retryLeftovers()
}

// retryLeftovers removes the files of deleted segments still on disk.
func (l *Log) retryLeftovers() {
	if len(l.leftovers) == 0 {
		return
	}
	var still []string
	for _, path := range l.leftovers {
		if err := l.fs.Remove(path); err != nil && !missing(err) {
			still = append(still, path)
			if l.note != nil {
				l.note("remove", fmt.Sprintf("removing the deleted segment %s (retried later)", filepath.Base(path)), err)
			}
		}
	}
	if len(still) < len(l.leftovers) {
		if err := l.fs.SyncDir(l.dir); err != nil && l.note != nil {
			l.note("remove", "syncing "+l.dir, err)
		}
	}
	l.leftovers = still
}
