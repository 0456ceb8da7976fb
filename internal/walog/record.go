package walog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// headerSize is a record's length and checksum, before its payload.
const headerSize = 8

// maxRecord bounds a record's payload: a longer entry is refused by
// StoreLogs, and a length field beyond it (or beyond the file) is never
// allocated.
const maxRecord = 16 << 20

// minPayload is the shortest payload: the fixed fields and two empty
// lengths (format 1; format 2 adds two bytes).
const minPayload = 8 + 8 + 1 + 8 + 1 + 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord marks a record that is cut short, fails its checksum or
// cannot be decoded.
var errBadRecord = errors.New("walog: bad record")

// The record formats: a segment of format 1 (written before segment
// headers existed) holds records without the batch field.
const (
	format1 = 1
	format2 = 2
)

// appendRecord appends l's record to buf. In format 2 the payload ends with
// batchOff, l's distance from the first entry of its StoreLogs batch.
func appendRecord(buf []byte, l *raft.Log, batchOff uint64) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, headerSize)...)
	buf = binary.LittleEndian.AppendUint64(buf, l.Index)
	buf = binary.LittleEndian.AppendUint64(buf, l.Term)
	buf = append(buf, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	buf = binary.LittleEndian.AppendUint64(buf, uint64(at))
	buf = binary.AppendUvarint(buf, uint64(len(l.Data)))
	buf = append(buf, l.Data...)
	buf = binary.AppendUvarint(buf, uint64(len(l.Extensions)))
	buf = append(buf, l.Extensions...)
	buf = binary.AppendUvarint(buf, batchOff)
	buf = append(buf, endMark)
	payload := buf[start+headerSize:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

// endMark ends every format-2 payload: a record whose write stopped short
// (a short write, then a crash) ends in a zero there, one garbled in place
// (a bit flip) does not.
const endMark = 0xa5

// recordSize is the size of l's record (format 2), to refuse one too long
// before anything is written.
func recordSize(l *raft.Log) int {
	return headerSize + minPayload + 1 + len(l.Data) + len(l.Extensions) + 3*binary.MaxVarintLen64
}

// readRecord reads the record at off of r, a file of size bytes: its
// payload and its whole length. A record cut short by the end of the file,
// one with a zero length or a length beyond maxRecord or the file, and one
// failing its checksum are errBadRecord; nothing beyond the file is ever
// allocated.
func readRecord(r io.ReaderAt, off, size int64, scratch []byte) (payload []byte, n int64, err error) {
	if off+headerSize > size {
		return nil, 0, errBadRecord
	}
	var h [headerSize]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return nil, 0, readErr(err)
	}
	n32 := binary.LittleEndian.Uint32(h[:4])
	if n32 < minPayload || n32 > maxRecord || int64(n32) > size-off-headerSize {
		return nil, 0, errBadRecord
	}
	if cap(scratch) < int(n32) {
		scratch = make([]byte, n32)
	}
	payload = scratch[:n32]
	if _, err := r.ReadAt(payload, off+headerSize); err != nil {
		return nil, 0, readErr(err)
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, 0, errBadRecord
	}
	return payload, headerSize + int64(n32), nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return errBadRecord
	}
	return err
}

// recordMeta is what replay checks of a record: its index, its term, and
// (format 2) the index of the first entry of its batch.
type recordMeta struct {
	index, term, batchFirst uint64
}

// decodeMeta reads a payload's index, term and batch, checking that the
// whole payload decodes.
func decodeMeta(payload []byte, format int) (recordMeta, error) {
	var l raft.Log
	off, err := decodeInto(payload, format, &l, false)
	if err != nil {
		return recordMeta{}, err
	}
	if off > l.Index {
		return recordMeta{}, errBadRecord
	}
	return recordMeta{index: l.Index, term: l.Term, batchFirst: l.Index - off}, nil
}

// decodeRecord fills l from a payload, copying its data.
func decodeRecord(payload []byte, format int, l *raft.Log) error {
	_, err := decodeInto(payload, format, l, true)
	return err
}

// decodeInto decodes a payload into l (its data and extensions copied when
// copyData) and returns the batch offset (0 in format 1).
func decodeInto(payload []byte, format int, l *raft.Log, copyData bool) (uint64, error) {
	if len(payload) < minPayload {
		return 0, errBadRecord
	}
	l.Index = binary.LittleEndian.Uint64(payload)
	l.Term = binary.LittleEndian.Uint64(payload[8:])
	l.Type = raft.LogType(payload[16])
	l.AppendedAt = time.Time{}
	if at := int64(binary.LittleEndian.Uint64(payload[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := payload[25:]
	data, rest, err := takeBytes(rest, copyData)
	if err != nil {
		return 0, err
	}
	ext, rest, err := takeBytes(rest, copyData)
	if err != nil {
		return 0, err
	}
	var off uint64
	if format == format2 {
		v, k := binary.Uvarint(rest)
		if k <= 0 || len(rest) != k+1 || rest[k] != endMark {
			return 0, errBadRecord
		}
		off, rest = v, rest[k+1:]
	}
	if len(rest) != 0 {
		return 0, errBadRecord
	}
	l.Data, l.Extensions = data, ext
	return off, nil
}

// takeBytes splits a uvarint-length-prefixed run off b (a copy when
// copyData).
func takeBytes(b []byte, copyData bool) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errBadRecord
	}
	if n == 0 {
		return nil, b[k:], nil
	}
	out := b[k : k+int(n)]
	if copyData {
		out = append([]byte(nil), out...)
	}
	return out, b[k+int(n):], nil
}

// CorruptError is a log directory whose files this log cannot prove hold
// what it acknowledged: a damaged record that is not a torn last write, a
// missing, renamed or foreign file, a state file that fails its checksums.
// Open refuses such a directory and changes nothing in it.
type CorruptError struct {
	// Path is the file at fault; Offset the byte in it (-1: the whole
	// file).
	Path   string
	Offset int64
	// Reason says what is wrong.
	Reason string
}

// Error names the file, the offset and what is wrong.
func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("walog: %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("walog: %s: at offset %d: %s", e.Path, e.Offset, e.Reason)
}

func corrupt(path string, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
