package walog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
)

// segHeaderSize is a format-2 segment's header: magic, log ID, sequence
// number, base index, checksum.
const segHeaderSize = 40

var segMagic = [8]byte{'H', 'F', 'W', 'A', 'L', 'S', 'G', '2'}

// segName is the file name of segment seq.
func segName(seq uint64) string { return fmt.Sprintf("%020d.seg", seq) }

// segment is one segment file and where its entries are.
type segment struct {
	seq    uint64
	format int
	path   string
	f      File
	base   uint64  // index of the first entry
	offs   []int64 // offset of each entry's record
	size   int64   // end of the last record
	alloc  int64   // the file's size: writing below it needs no new space
	sealed bool    // takes no more appends
	// lastTerm and batchFirst describe the last record.
	lastTerm, batchFirst uint64
}

// lastIndex is the index of s's last entry (base-1 when empty).
func (s *segment) lastIndex() uint64 { return s.base + uint64(len(s.offs)) - 1 }

func encodeSegHeader(logID, seq, base uint64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic[:])
	binary.LittleEndian.PutUint64(h[8:], logID)
	binary.LittleEndian.PutUint64(h[16:], seq)
	binary.LittleEndian.PutUint64(h[24:], base)
	binary.LittleEndian.PutUint32(h[32:], crc32.Checksum(h[:32], castagnoli))
	return h
}

// readSegHeader checks segment s's header against the log's ID and the
// file's name, and sets s.base.
func (s *segment) readSegHeader(logID uint64, fileSize int64) error {
	if fileSize < segHeaderSize {
		return corrupt(s.path, 0, "the segment is %d bytes, shorter than its header", fileSize)
	}
	h := make([]byte, segHeaderSize)
	if _, err := s.f.ReadAt(h, 0); err != nil {
		return fmt.Errorf("walog: reading %s: %w", s.path, err)
	}
	switch {
	case !bytes.Equal(h[:8], segMagic[:]):
		return corrupt(s.path, 0, "not a segment of this log (no segment header)")
	case crc32.Checksum(h[:32], castagnoli) != binary.LittleEndian.Uint32(h[32:]):
		return corrupt(s.path, 0, "the segment header fails its checksum")
	case binary.LittleEndian.Uint64(h[8:]) != logID:
		return corrupt(s.path, 0, "the segment belongs to another log (log ID %016x, this one is %016x)",
			binary.LittleEndian.Uint64(h[8:]), logID)
	case binary.LittleEndian.Uint64(h[16:]) != s.seq:
		return corrupt(s.path, 0, "the header names segment %d: the file was renamed", binary.LittleEndian.Uint64(h[16:]))
	}
	s.base = binary.LittleEndian.Uint64(h[24:])
	return nil
}

// stop is where a segment's good records end, and why ("" at the end of
// the file).
type stop struct {
	off    int64
	reason string
}

// scan indexes s's records from s.size on, until the end of the file or
// the first record that is bad or does not follow: cut short, failing its
// checksum, not decoding, not the next index, a lower term than the one
// before, or not fitting its batch. anyBase lets the first record set
// s.base (the first segment of a format-1 log).
func (s *segment) scan(fileSize int64, prevTerm uint64, anyBase bool) (stop, error) {
	var scratch []byte
	for {
		off := s.size
		if off == fileSize {
			return stop{off: off}, nil
		}
		payload, n, err := readRecord(s.f, off, fileSize, scratch)
		if err == errBadRecord {
			return stop{off, "a record cut short, of an impossible length, or failing its checksum"}, nil
		}
		if err != nil {
			return stop{}, fmt.Errorf("walog: reading %s: %w", s.path, err)
		}
		scratch = payload
		m, err := decodeMeta(payload, s.format)
		if err != nil {
			return stop{off, "a record with a valid checksum that does not decode"}, nil
		}
		if anyBase && len(s.offs) == 0 {
			s.base = m.index
		}
		if why := s.misfit(m, prevTerm); why != "" {
			return stop{off, why}, nil
		}
		s.offs = append(s.offs, off)
		s.size += n
		s.lastTerm, s.batchFirst = m.term, m.batchFirst
	}
}

// misfit says why a record with m cannot come next in s ("" if it can).
func (s *segment) misfit(m recordMeta, prevTerm uint64) string {
	want := s.base + uint64(len(s.offs))
	last := prevTerm
	if len(s.offs) > 0 {
		last = s.lastTerm
	}
	switch {
	case m.index != want:
		return fmt.Sprintf("a record of entry %d where entry %d belongs", m.index, want)
	case m.term < last:
		return fmt.Sprintf("entry %d of term %d after term %d", m.index, m.term, last)
	case s.format == format2 && m.batchFirst != m.index && (len(s.offs) == 0 || m.batchFirst != s.batchFirst):
		return fmt.Sprintf("entry %d claims a batch from %d it does not continue", m.index, m.batchFirst)
	}
	return ""
}

// name is s's file name, for messages.
func (s *segment) name() string { return filepath.Base(s.path) }
