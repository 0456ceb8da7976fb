package walog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// errReadOnly is every write's error on a log opened ReadOnly.
var errReadOnly = errors.New("walog: opened read-only")

// StoreLog appends one entry (see StoreLogs).
func (l *Log) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

// StoreLogs appends entries, which must have consecutive indexes starting
// right after the last one (anywhere when the log is empty), and returns
// once they are on disk. On failure the log is as before the call, on disk
// too (the bytes written are zeroed and synced again); if even that fails,
// every later write fails.
func (l *Log) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	l.mu.RLock()
	last := l.last
	l.mu.RUnlock()
	for i, e := range logs {
		if (last != 0 || i > 0) && e.Index != last+1 {
			return fmt.Errorf("walog: entry %d does not follow %d", e.Index, last)
		}
		if recordSize(e) > maxRecord {
			return fmt.Errorf("walog: entry %d is %d bytes, more than the %d a record holds", e.Index, len(e.Data)+len(e.Extensions), maxRecord)
		}
		last = e.Index
	}
	s, err := l.activeSegment(logs[0].Index)
	if err != nil {
		return err
	}
	buf := l.buf[:0]
	offs := make([]int64, 0, len(logs))
	for i, e := range logs {
		offs = append(offs, s.size+int64(len(buf)))
		buf = appendRecord(buf, e, uint64(i))
	}
	l.buf = buf
	deferred := l.deferring(logs)
	if err := l.writeRecords(s, buf, !deferred); err != nil {
		return err
	}
	defer l.stored(s, last, deferred)
	l.mu.Lock()
	defer l.mu.Unlock()
	s.offs = append(s.offs, offs...)
	s.size += int64(len(buf))
	s.lastTerm, s.batchFirst = logs[len(logs)-1].Term, logs[0].Index
	if l.first == 0 {
		l.first = logs[0].Index
	}
	l.last = last
	return nil
}

// writable returns the error every write returns, if any: closed, read
// only, or an earlier failure not undone. Called with wmu held.
func (l *Log) writable() error {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case l.readOnly:
		return errReadOnly
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// writeRecords writes buf after s's last record and syncs (unless sync is
// false: a deferred sync, flushLocked's). The space is
// reserved first where the segment's allocation does not cover it (so a
// full disk fails before anything is written); a failed write or sync is
// undone.
func (l *Log) writeRecords(s *segment, buf []byte, sync bool) error {
	end := s.size + int64(len(buf))
	if end > s.alloc {
		err := s.f.Allocate(s.alloc, end-s.alloc)
		switch {
		case err == nil:
			s.alloc = end
		case !errors.Is(err, ErrUnsupported):
			return fmt.Errorf("walog: reserving %d bytes in %s: %w", end-s.alloc, s.path, err)
		}
	}
	_, err := s.f.WriteAt(buf, s.size)
	if err == nil && sync {
		err = s.f.Sync()
	}
	if err != nil {
		return l.undoAppend(s, fmt.Errorf("walog: appending to %s: %w", s.path, err))
	}
	s.alloc = max(s.alloc, end)
	return nil
}

// undoAppend puts segment s back as it was before a failed append: the
// file cut back to its last record and synced (a change of size, which a
// crash keeps whole or not at all), then its space reserved again. If
// that fails too, every later write fails.
func (l *Log) undoAppend(s *segment, cause error) error {
	if err := l.clearFrom(s, s.size); err != nil {
		return l.poison(fmt.Errorf("walog: an append failed (%v) and could not be undone (%v): the log refuses every write until it is reopened", cause, err))
	}
	return cause
}

// activeSegment returns the segment that takes the next append (of an
// entry at index base), starting a new one when there is none or the last
// is sealed or has grown past the segment size. Called with wmu held.
func (l *Log) activeSegment(base uint64) (*segment, error) {
	l.mu.RLock()
	var last *segment
	if n := len(l.segs); n > 0 {
		last = l.segs[n-1]
	}
	empty := l.last == 0
	l.mu.RUnlock()
	if last != nil && !last.sealed && last.size < l.segSize {
		if empty && len(last.offs) == 0 && last.base != base {
			return last, l.rebase(last, base)
		}
		return last, nil
	}
	if last != nil && empty {
		// Empty segments of an empty log (a format-1 one, sealed): the new
		// segment must not follow them, as it starts anywhere.
		if err := l.dropSegments(); err != nil {
			return nil, err
		}
		last = nil
	}
	if last != nil && !last.sealed {
		if err := l.seal(last); err != nil {
			return nil, err
		}
	}
	return l.newSegment(base)
}

// rebase rewrites the header of an empty segment of an empty log to start
// at base (an empty log takes any first index).
func (l *Log) rebase(s *segment, base uint64) error {
	if _, err := s.f.WriteAt(encodeSegHeader(l.st.cur.logID, s.seq, base), 0); err != nil {
		return l.undoHeader(s, fmt.Errorf("walog: rewriting the header of %s: %w", s.path, err))
	}
	if err := s.f.Sync(); err != nil {
		return l.undoHeader(s, fmt.Errorf("walog: syncing %s: %w", s.path, err))
	}
	l.mu.Lock()
	s.base = base
	l.mu.Unlock()
	return nil
}

// undoHeader writes s's header back after a failed rebase; if that fails
// too, every later write fails.
func (l *Log) undoHeader(s *segment, cause error) error {
	if _, err := s.f.WriteAt(encodeSegHeader(l.st.cur.logID, s.seq, s.base), 0); err == nil {
		if err = s.f.Sync(); err == nil {
			return cause
		}
	}
	return l.poison(fmt.Errorf("walog: %v, and the header could not be put back: the log refuses every write until it is reopened", cause))
}

// seal cuts a full segment's preallocated tail before another follows it:
// a segment that others follow must end at its last record.
func (l *Log) seal(s *segment) error {
	if s.alloc > s.size {
		if err := s.f.Truncate(s.size); err != nil {
			return fmt.Errorf("walog: sealing %s: %w", s.path, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("walog: sealing %s: %w", s.path, err)
		}
		s.alloc = s.size
	}
	l.mu.Lock()
	s.sealed = true
	l.mu.Unlock()
	return nil
}

// newSegment creates the next segment file, starting at index base: its
// header written, its space reserved, synced with its directory, then
// listed in the state file. On failure nothing of it is left.
func (l *Log) newSegment(base uint64) (*segment, error) {
	// A segment a suffix deletion removed may still be on disk under the
	// name the new one takes: remove it first (or fail, as before).
	l.retryLeftovers()
	next := l.st.cur.clone()
	seq := next.next
	s := &segment{seq: seq, format: format2, path: filepath.Join(l.dir, segName(seq)), base: base, size: segHeaderSize}
	f, err := l.fs.OpenFile(s.path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("walog: creating %s: %w", s.path, err)
	}
	s.f = f
	discard := func(err error) (*segment, error) {
		f.Close()
		if l.failed == nil { // else the state file may list it: leave it
			if rmErr := l.fs.Remove(s.path); rmErr == nil {
				l.fs.SyncDir(l.dir)
			}
		}
		return nil, err
	}
	switch err := f.Allocate(0, l.segSize); {
	case err == nil:
		s.alloc = l.segSize
	case !errors.Is(err, ErrUnsupported):
		return discard(fmt.Errorf("walog: reserving %d bytes for %s: %w", l.segSize, s.path, err))
	}
	if _, err := f.WriteAt(encodeSegHeader(next.logID, seq, base), 0); err != nil {
		return discard(fmt.Errorf("walog: writing %s: %w", s.path, err))
	}
	s.alloc = max(s.alloc, segHeaderSize)
	if err := f.Sync(); err != nil {
		return discard(fmt.Errorf("walog: syncing %s: %w", s.path, err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return discard(fmt.Errorf("walog: syncing %s: %w", l.dir, err))
	}
	next.next = seq + 1
	if len(l.segs) == 0 {
		next.first = seq
	}
	if err := l.writeState(next); err != nil {
		return discard(err)
	}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	return s, nil
}

// writeState makes next the durable state; a failure that could not be
// undone makes every later write fail. Called with wmu held.
func (l *Log) writeState(next *state) error {
	if f := l.st.write(next); f != nil {
		if !f.undone {
			return l.poison(fmt.Errorf("%w: the log refuses every write until it is reopened", f.err))
		}
		return f.err
	}
	return nil
}

// poison makes every later write fail with err (a failure that could not
// be undone). Called with wmu held.
func (l *Log) poison(err error) error {
	l.mu.Lock()
	l.failed = err
	l.mu.Unlock()
	return err
}

// Failed returns the failure that makes the log refuse every write (a
// failed call that could not be undone), or nil while it takes writes.
func (l *Log) Failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

// Reserve makes sure the active segment has n bytes reserved after its
// last record (reserving them if not), and returns the error of a disk
// that has no room for them: a check that appends can go on, without
// writing an entry.
func (l *Log) Reserve(n int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	l.mu.RLock()
	var s *segment
	if k := len(l.segs); k > 0 && !l.segs[k-1].sealed {
		s = l.segs[k-1]
	}
	l.mu.RUnlock()
	if s == nil || s.alloc-s.size >= n {
		return nil
	}
	err := s.f.Allocate(s.alloc, s.size+n-s.alloc)
	switch {
	case err == nil:
		s.alloc = s.size + n
	case errors.Is(err, ErrUnsupported):
		return nil
	}
	return err
}
