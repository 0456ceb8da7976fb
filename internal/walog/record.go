package walog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// headerSize is a record's length and checksum, before its payload.
const headerSize = 8

// maxRecord bounds a record's payload, so that a corrupt length is never
// allocated.
const maxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord marks a record that is cut short, fails its checksum or
// cannot be decoded.
var errBadRecord = errors.New("walog: bad record")

// appendRecord appends l's record to buf.
func appendRecord(buf []byte, l *raft.Log) []byte {
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
	payload := buf[start+headerSize:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

// readRecord reads the record at off of r: its payload and its whole length.
// A record cut short by the end of the file, one with a zero or oversized
// length, and one failing its checksum are errBadRecord.
func readRecord(r io.ReaderAt, off int64, scratch []byte) (payload []byte, n int64, err error) {
	var h [headerSize]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, errBadRecord
		}
		return nil, 0, err
	}
	size := binary.LittleEndian.Uint32(h[:4])
	if size == 0 || size > maxRecord {
		return nil, 0, errBadRecord
	}
	if cap(scratch) < int(size) {
		scratch = make([]byte, size)
	}
	payload = scratch[:size]
	if _, err := r.ReadAt(payload, off+headerSize); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, errBadRecord
		}
		return nil, 0, err
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, 0, errBadRecord
	}
	return payload, headerSize + int64(size), nil
}

// recordIndex is the raft index a payload holds.
func recordIndex(payload []byte) (uint64, error) {
	if len(payload) < 8 {
		return 0, errBadRecord
	}
	return binary.LittleEndian.Uint64(payload), nil
}

// decodeRecord fills l from a payload, copying its data.
func decodeRecord(payload []byte, l *raft.Log) error {
	if len(payload) < 25 {
		return errBadRecord
	}
	l.Index = binary.LittleEndian.Uint64(payload)
	l.Term = binary.LittleEndian.Uint64(payload[8:])
	l.Type = raft.LogType(payload[16])
	l.AppendedAt = time.Time{}
	if at := int64(binary.LittleEndian.Uint64(payload[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := payload[25:]
	data, rest, err := takeBytes(rest)
	if err != nil {
		return err
	}
	ext, rest, err := takeBytes(rest)
	if err != nil || len(rest) != 0 {
		return errBadRecord
	}
	l.Data, l.Extensions = data, ext
	return nil
}

// takeBytes splits a uvarint-length-prefixed copy off b.
func takeBytes(b []byte) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errBadRecord
	}
	if n == 0 {
		return nil, b[k:], nil
	}
	out := make([]byte, n)
	copy(out, b[k:k+int(n)])
	return out, b[k+int(n):], nil
}
