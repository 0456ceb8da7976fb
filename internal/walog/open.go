package walog

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// v1StableFile is the stable store of a log of format 1: its keys and
// values, rewritten whole on each Set, without a checksum. Open upgrades
// it into the state file.
const v1StableFile = "stable"

// loadState opens the state file, or makes one: for a new directory, or
// from a format-1 directory's stable file and segments (an upgrade: the
// segments stay as they are and are read in their format).
func (l *Log) loadState(d dirList) error {
	path := filepath.Join(l.dir, stateFile)
	if d.state {
		st, err := readState(l.fs, path, !l.readOnly)
		if err != nil {
			return err
		}
		l.st = st
		if d.v1Stable { // an upgrade interrupted after the state file was made
			l.removeLeftover(filepath.Join(l.dir, v1StableFile), "the stable file the state file replaced")
		}
		return nil
	}
	s := &state{logID: newLogID(), first: 1, next: 1, kv: map[string][]byte{}}
	if d.v1Stable || len(d.segs) > 0 {
		if err := l.legacyState(d, s); err != nil {
			return err
		}
	}
	if l.readOnly {
		l.st = &stateStore{fsys: l.fs, path: path, cur: s}
		if d.v1Stable || len(d.segs) > 0 {
			l.notef("would upgrade the log from format 1: the state file would replace %s", v1StableFile)
		}
		return nil
	}
	st, err := createState(l.fs, path, s)
	if err != nil {
		return err
	}
	l.st = st
	if d.v1Stable {
		if err := l.fs.Remove(filepath.Join(l.dir, v1StableFile)); err != nil {
			return fmt.Errorf("walog: removing %s after the upgrade: %w", v1StableFile, err)
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("walog: syncing %s: %w", l.dir, err)
		}
		l.notef("upgraded the log from format 1: its %d segment(s) are read as they are, new ones are of format 2", len(d.segs))
	}
	return nil
}

// legacyState fills s from a format-1 directory: its stable file, and its
// segments (which must all be of format 1: a format-2 segment without the
// state file means the state file is lost).
func (l *Log) legacyState(d dirList, s *state) error {
	for _, seq := range d.segs {
		path := filepath.Join(l.dir, segName(seq))
		if head, err := l.readHead(path); err != nil {
			return err
		} else if bytes.HasPrefix(head, segMagic[:]) {
			return corrupt(filepath.Join(l.dir, stateFile), -1,
				"the state file is missing beside segments that need it (%s): the term, the vote and the segment list are lost", segName(seq))
		}
	}
	if !d.v1Stable {
		return corrupt(filepath.Join(l.dir, v1StableFile), -1,
			"the stable file (term and vote) is missing beside %d segment(s): a voter that forgot its vote can vote twice in a term", len(d.segs))
	}
	kv, err := l.readV1Stable(filepath.Join(l.dir, v1StableFile))
	if err != nil {
		return err
	}
	s.kv = kv
	if len(d.segs) > 0 {
		s.first, s.next, s.legacy = d.segs[0], d.segs[len(d.segs)-1]+1, d.segs[len(d.segs)-1]
	}
	return nil
}

// readHead reads the first bytes of a file (fewer if it is shorter).
func (l *Log) readHead(path string) ([]byte, error) {
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("walog: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("walog: %w", err)
	}
	head := make([]byte, min(size, segHeaderSize))
	if size == 0 {
		return head, nil
	}
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("walog: reading %s: %w", path, err)
	}
	return head, nil
}

// readV1Stable reads a format-1 stable file: uvarint-prefixed keys and
// values, to the end.
func (l *Log) readV1Stable(path string) (map[string][]byte, error) {
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("walog: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("walog: %w", err)
	}
	if size > maxBody {
		return nil, corrupt(path, -1, "the stable file is %d bytes: more than its keys can take", size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("walog: reading %s: %w", path, err)
	}
	kv := map[string][]byte{}
	for off := 0; len(b) > 0; {
		k, rest, err := takeBytes(b, true)
		if err == nil {
			var v []byte
			if v, rest, err = takeBytes(rest, true); err == nil {
				kv[string(k)] = v
			}
		}
		if err != nil {
			return nil, corrupt(path, int64(off), "the stable file does not decode")
		}
		off += len(b) - len(rest)
		b = rest
	}
	return kv, nil
}

// newLogID is a random, non-zero log ID.
func newLogID() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// openSegment opens segment seq's file.
func (l *Log) openSegment(seq uint64, first bool) (*segment, error) {
	s := &segment{seq: seq, format: format2, path: filepath.Join(l.dir, segName(seq))}
	if seq <= l.st.cur.legacy {
		s.format = format1
	}
	flag := os.O_RDWR
	if l.readOnly {
		flag = os.O_RDONLY
	}
	f, err := l.fs.OpenFile(s.path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("walog: %w", err)
	}
	s.f = f
	if s.alloc, err = f.Size(); err != nil {
		f.Close()
		return nil, fmt.Errorf("walog: %w", err)
	}
	return s, nil
}

// sealLegacy cuts the zeros after the last record of a format-1 last
// segment, which takes no appends (they go to a new segment of format 2):
// a segment that others follow must end at its last record.
func (l *Log) sealLegacy(s *segment) error {
	if l.readOnly {
		return nil
	}
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("walog: sealing %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("walog: sealing %s: %w", s.path, err)
	}
	s.alloc = s.size
	return nil
}

// removeLeftover removes a file an interrupted operation left (or, read
// only, notes it); a failure is noted, and retried at the next open.
func (l *Log) removeLeftover(path, what string) {
	if l.readOnly {
		l.notef("would remove %s: %s", filepath.Base(path), what)
		return
	}
	if err := l.fs.Remove(path); err != nil && !missing(err) {
		if l.note != nil {
			l.note("remove", fmt.Sprintf("removing %s (%s)", filepath.Base(path), what), err)
		}
		return
	}
	if err := l.fs.SyncDir(l.dir); err != nil && l.note != nil {
		l.note("remove", "syncing "+l.dir, err)
	}
	l.notef("removed %s: %s", filepath.Base(path), what)
}

// setAside moves a segment file after the state file's list to
// NAME.broken[.N]: a segment created or a suffix deleted at a crash leaves
// one (its header is this log's, or was never completed). Any other file
// there is refused.
func (l *Log) setAside(seq uint64, path string) error {
	head, err := l.readHead(path)
	if err != nil {
		return err
	}
	if !l.mayBeOurs(head, seq) {
		return corrupt(path, -1, "the segment is after the last one the state file lists (%d) and is not one this log was writing at a crash", l.st.cur.next-1)
	}
	if l.readOnly {
		l.notef("would set %s aside: after the segments the state file lists (a crash while creating it or deleting it)", filepath.Base(path))
		return nil
	}
	to := path + ".broken"
	for n := 1; ; n++ {
		if _, err := l.fs.Stat(to); missing(err) {
			break
		}
		to = fmt.Sprintf("%s.broken.%d", path, n)
	}
	if err := l.fs.Rename(path, to); err != nil {
		return fmt.Errorf("walog: %w", err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("walog: syncing %s: %w", l.dir, err)
	}
	l.notef("set %s aside as %s: it follows the segments the state file lists (a crash while creating it or deleting it)", filepath.Base(path), filepath.Base(to))
	return nil
}

// mayBeOurs reports whether head, the start of segment file seq, is this
// log's header for it, or as much of it as a crash during its creation
// left (each byte of the magic, the log ID and the sequence number either
// written or still zero).
func (l *Log) mayBeOurs(head []byte, seq uint64) bool {
	want := encodeSegHeader(l.st.cur.logID, seq, 0)
	for i, b := range head[:min(len(head), 24)] {
		if b != 0 && b != want[i] {
			return false
		}
	}
	return true
}

// syncOpened makes what Open read durable before Open returns. After a
// process crash (not a power cut) the page cache still holds what the
// process wrote and had not synced yet: an append in flight or acknowledged
// before its sync, a suffix cut, a failed append zeroed back. Open reads it
// like anything else, and raft acts on it at once (it acknowledges the
// entries it finds), so a power cut later must not take it away. Only the
// last segment can hold such writes: every other one was synced whole
// before the next one was started. The state file needs no sync here: a
// slot written but not synced differs from the other, which makes Open
// rewrite and sync both (heal), and once the second slot is synced the
// first holds the same state. Nor does the directory: a segment is listed
// only once its creation is synced, and a file whose removal or renaming
// was lost comes back unlisted, which the next Open handles again.
func (l *Log) syncOpened() error {
	n := len(l.segs)
	if n == 0 {
		return nil
	}
	if err := l.segs[n-1].f.Sync(); err != nil {
		return fmt.Errorf("walog: syncing %s after open: %w", l.segs[n-1].path, err)
	}
	return nil
}
