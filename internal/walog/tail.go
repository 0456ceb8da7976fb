package walog

import (
	"encoding/binary"
	"fmt"
	"os"
)

// sectorSize is the unit a disk writes whole (or not at all) in the torn
// write model recovery assumes: a write the crash interrupted leaves some
// of its sectors written and the others as they were (zeros, in the
// preallocated space past the log's end).
const sectorSize = 512

// window is how much of a damaged tail recovery reads at a time.
const window = 1 << 20

// tail is what follows the last good record of the last segment.
type tail struct {
	off     int64 // where the good records end
	nonZero int64 // end of the last non-zero byte (off when all zero)
}

// examineTail decides whether the bytes after the last good record of the
// last segment s (the scan stopped at st) are what a crash during the
// last append can leave: zeros, or a torn last batch. It returns the tail
// to cut (nonZero > off) or a CorruptError. A torn batch is a bad record
// with a zero-filled sector or running past the end of the file, or (format
// 2) bytes that stop before the shortest record's end mark, possibly
// followed by records of the same batch (written back out of order); a
// valid record of a later batch, or a record failing its checksum with no
// sign of a torn write, is corruption: the log went on after it, so it was
// acknowledged.
func (s *segment) examineTail(st stop, fileSize int64) (tail, error) {
	t := tail{off: st.off, nonZero: st.off}
	z, err := lastNonZero(s.f, st.off, fileSize)
	if err != nil {
		return t, fmt.Errorf("walog: reading %s: %w", s.path, err)
	}
	if z == st.off {
		return t, nil // zeros: the preallocated space after the last append
	}
	t.nonZero = z
	sameBatch, err := s.laterRecords(st.off, z, fileSize)
	if err != nil {
		return t, err
	}
	if sameBatch {
		return t, nil
	}
	if s.format == format2 && z < st.off+headerSize+minPayload+2 {
		// Zeros from where the shortest record's end mark would be: no
		// record was completed here, only the start of one. A short write
		// may have cut its length field, so that the length read is
		// impossible and points at no end mark to look at.
		return t, nil
	}
	torn, err := s.looksTorn(st.off, fileSize)
	if err != nil {
		return t, err
	}
	if !torn {
		return t, corrupt(s.path, st.off, "%s, and not a torn write (no zero-filled sector): the entries before it are intact and it was acknowledged",
			st.reason)
	}
	return t, nil
}

// lastNonZero returns the end of the last non-zero byte of f in
// [from, size), or from when all are zero.
func lastNonZero(f File, from, size int64) (int64, error) {
	buf := make([]byte, min(window, max(size-from, 0)))
	end := from
	for off := from; off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				end = off + i + 1
				break
			}
		}
		off += n
	}
	return end, nil
}

// laterRecords looks for valid records after the bad one at off (up to z,
// the last non-zero byte). It reports whether it found records of the
// torn batch (then the tear is proven), and returns a CorruptError for a
// record that proves the log went on after the bad one.
func (s *segment) laterRecords(off, z, fileSize int64) (bool, error) {
	want := s.base + uint64(len(s.offs)) // the index the bad record should hold
	// At most this many records fit in the damaged span.
	span := uint64((z-off)/(headerSize+minPayload)) + 1
	found := false
	var scratch []byte
	buf := make([]byte, 0, window+headerSize+8)
	var bufAt int64
	for p := off + 1; p+headerSize+minPayload <= z; p++ {
		if p+headerSize+8 > bufAt+int64(len(buf)) {
			bufAt = p
			n := min(int64(cap(buf)), fileSize-p)
			buf = buf[:n]
			if _, err := s.f.ReadAt(buf, p); err != nil {
				return false, fmt.Errorf("walog: reading %s: %w", s.path, err)
			}
		}
		h := buf[p-bufAt:]
		length := int64(binary.LittleEndian.Uint32(h))
		idx := binary.LittleEndian.Uint64(h[headerSize:])
		if length < minPayload || length > maxRecord || p+headerSize+length > fileSize || idx < want-min(want, 1) || idx > want+span {
			continue
		}
		payload, n, err := readRecord(s.f, p, fileSize, scratch)
		if err == errBadRecord {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("walog: reading %s: %w", s.path, err)
		}
		scratch = payload
		m, err := decodeMeta(payload, s.format)
		if err != nil {
			continue
		}
		if why := s.provesLater(m, want); why != "" {
			return false, corrupt(s.path, off, "a bad record, yet a valid record at offset %d %s: the log went on after the bad record, so it was acknowledged", p, why)
		}
		found = true
		p += n - 1
	}
	return found, nil
}

// provesLater says why a valid record m found after the bad record that
// should hold entry want shows that the bad one was complete ("" when m
// may belong to the same, torn, batch).
func (s *segment) provesLater(m recordMeta, want uint64) string {
	switch {
	case s.format == format1:
		return fmt.Sprintf("holds entry %d (this segment's format has no batches to tell a torn write by)", m.index)
	case m.index < want:
		return fmt.Sprintf("holds entry %d, older than the entries before it", m.index)
	case m.batchFirst > want:
		return fmt.Sprintf("holds entry %d of a batch from %d, written after the bad record's batch was synced", m.index, m.batchFirst)
	case m.batchFirst == want, len(s.offs) > 0 && m.batchFirst == s.batchFirst:
		return ""
	}
	return fmt.Sprintf("holds entry %d of a batch from %d that does not fit", m.index, m.batchFirst)
}

// looksTorn reports whether the bad record at off looks like a write cut
// by a crash: a zero header, a length running past the end of the file,
// a zero-filled sector among the bytes its length covers, or (format 2) a
// zero where its end mark belongs (a short write: the rest of its sector
// never written).
func (s *segment) looksTorn(off, fileSize int64) (bool, error) {
	var h [headerSize]byte
	if off+headerSize > fileSize {
		return true, nil
	}
	if _, err := s.f.ReadAt(h[:], off); err != nil {
		return false, fmt.Errorf("walog: reading %s: %w", s.path, err)
	}
	length := int64(binary.LittleEndian.Uint32(h[:]))
	end := off + headerSize
	switch {
	case h == [headerSize]byte{}:
		return true, nil
	case length > maxRecord || off+headerSize+length > fileSize:
		return true, nil
	case length >= minPayload:
		end += length
	}
	buf := make([]byte, sectorSize)
	if s.format == format2 && end > off+headerSize {
		if _, err := s.f.ReadAt(buf[:1], end-1); err != nil {
			return false, fmt.Errorf("walog: reading %s: %w", s.path, err)
		}
		if buf[0] == 0 {
			return true, nil
		}
	}
	for at := off; at < end; {
		next := min((at/sectorSize+1)*sectorSize, end)
		chunk := buf[:next-at]
		if _, err := s.f.ReadAt(chunk, at); err != nil {
			return false, fmt.Errorf("walog: reading %s: %w", s.path, err)
		}
		if allZero(chunk) {
			return true, nil
		}
		at = next
	}
	return false, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cutTail keeps a copy of segment s's file (NAME.broken, or NAME.broken.N)
// and cuts the torn tail t off (the file cut at t.off and synced, a change
// of size a crash keeps whole; its space then reserved again), so that
// the log ends at t.off.
func (l *Log) cutTail(s *segment, t tail, fileSize int64) error {
	copyPath, err := l.keepCopy(s, fileSize)
	if err != nil {
		return err
	}
	s.size = t.off
	if err := l.clearFrom(s, t.off); err != nil {
		return fmt.Errorf("walog: cutting the torn tail of %s: %w", s.path, err)
	}
	l.notef("cut the torn tail of %s at offset %d (%d bytes, after entry %d); the file as it was is kept as %s",
		s.name(), t.off, t.nonZero-t.off, s.lastIndex(), copyPath)
	return nil
}

// keepCopy copies s's file to a new NAME.broken[.N] beside it, synced.
func (l *Log) keepCopy(s *segment, size int64) (string, error) {
	path := s.path + ".broken"
	for n := 1; ; n++ {
		if _, err := l.fs.Stat(path); missing(err) {
			break
		} else if err != nil {
			return "", fmt.Errorf("walog: %w", err)
		}
		path = fmt.Sprintf("%s.broken.%d", s.path, n)
	}
	f, err := l.fs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("walog: keeping a copy of %s: %w", s.path, err)
	}
	defer f.Close()
	buf := make([]byte, min(window, size))
	for at := int64(0); at < size; {
		n := min(int64(len(buf)), size-at)
		if _, err := s.f.ReadAt(buf[:n], at); err != nil {
			return "", fmt.Errorf("walog: keeping a copy of %s: %w", s.path, err)
		}
		if _, err := f.WriteAt(buf[:n], at); err != nil {
			return "", fmt.Errorf("walog: keeping a copy of %s: %w", s.path, err)
		}
		at += n
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("walog: keeping a copy of %s: %w", s.path, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return "", fmt.Errorf("walog: syncing %s: %w", l.dir, err)
	}
	return path, nil
}
