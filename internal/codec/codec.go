package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxDepth bounds the nesting of arrays and maps Check accepts, so a hostile
// input cannot exhaust the decoder's stack.
const MaxDepth = 256

// Decode decodes exactly one msgpack value from b into v (a pointer). It is
// safe on arbitrary input: Check runs first, and a panic inside the msgpack
// decoder is turned into an error. The caller bounds len(b).
func Decode(b []byte, v any) (err error) {
	if err := Check(b); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode %T: panic: %v", v, r)
		}
	}()
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// msgpack value kinds for the header table.
const (
	kScalar  = iota // fixed payload of `extra` bytes
	kBlob           // payload of (length + extra) bytes
	kArray          // length elements follow
	kMap            // 2*length elements follow
	kInvalid        // never used byte (0xc1)
)

// shape describes a msgpack type byte in 0xc0..0xdf.
type shape struct {
	lenSize uint8 // bytes of the big-endian length field
	extra   uint8 // fixed payload bytes (ext type byte, scalar width)
	kind    uint8
}

var shapes = [32]shape{
	{0, 0, kScalar}, {0, 0, kInvalid}, {0, 0, kScalar}, {0, 0, kScalar}, // c0 nil, c1, c2 false, c3 true
	{1, 0, kBlob}, {2, 0, kBlob}, {4, 0, kBlob}, // c4-c6 bin
	{1, 1, kBlob}, {2, 1, kBlob}, {4, 1, kBlob}, // c7-c9 ext
	{0, 4, kScalar}, {0, 8, kScalar}, // ca, cb float
	{0, 1, kScalar}, {0, 2, kScalar}, {0, 4, kScalar}, {0, 8, kScalar}, // cc-cf uint
	{0, 1, kScalar}, {0, 2, kScalar}, {0, 4, kScalar}, {0, 8, kScalar}, // d0-d3 int
	{0, 2, kScalar}, {0, 3, kScalar}, {0, 5, kScalar}, {0, 9, kScalar}, {0, 17, kScalar}, // d4-d8 fixext
	{1, 0, kBlob}, {2, 0, kBlob}, {4, 0, kBlob}, // d9-db str
	{2, 0, kArray}, {4, 0, kArray}, // dc, dd
	{2, 0, kMap}, {4, 0, kMap}, // de, df
}

// header parses the type byte at b[i] and returns the payload bytes to skip,
// the number of child values and the index after the header.
func header(b []byte, i int) (skip, children uint64, next int, err error) {
	c := b[i]
	i++
	switch {
	case c <= 0x7f || c >= 0xe0: // fixint
		return 0, 0, i, nil
	case c <= 0x8f:
		return 0, 2 * uint64(c&0x0f), i, nil
	case c <= 0x9f:
		return 0, uint64(c & 0x0f), i, nil
	case c <= 0xbf:
		return uint64(c & 0x1f), 0, i, nil
	}
	s := shapes[c-0xc0]
	if s.kind == kInvalid {
		return 0, 0, i, fmt.Errorf("invalid msgpack byte 0x%x at %d", c, i-1)
	}
	if len(b)-i < int(s.lenSize) {
		return 0, 0, i, fmt.Errorf("truncated msgpack header at %d", i-1)
	}
	var n uint64
	switch s.lenSize {
	case 1:
		n = uint64(b[i])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[i:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[i:]))
	}
	i += int(s.lenSize)
	switch s.kind {
	case kBlob:
		return n + uint64(s.extra), 0, i, nil
	case kArray:
		return 0, n, i, nil
	case kMap:
		return 0, 2 * n, i, nil
	}
	return uint64(s.extra), 0, i, nil
}

// Check walks b as exactly one msgpack value without allocating per
// element, rejecting truncation, trailing bytes, excessive nesting and
// containers that declare more elements than bytes remain.
func Check(b []byte) error {
	stack := make([]uint64, 1, 16) // values still to read at each depth
	stack[0] = 1
	i := 0
	for len(stack) > 0 {
		top := len(stack) - 1
		if stack[top] == 0 {
			stack = stack[:top]
			continue
		}
		stack[top]--
		if i >= len(b) {
			return fmt.Errorf("truncated msgpack value at %d", i)
		}
		skip, children, next, err := header(b, i)
		if err != nil {
			return err
		}
		i = next
		if skip > uint64(len(b)-i) {
			return fmt.Errorf("truncated msgpack payload at %d", i)
		}
		i += int(skip)
		if children == 0 {
			continue
		}
		if children > uint64(len(b)-i) {
			return fmt.Errorf("msgpack container declares %d elements with %d bytes left", children, len(b)-i)
		}
		if len(stack) >= MaxDepth {
			return fmt.Errorf("msgpack nesting deeper than %d", MaxDepth)
		}
		stack = append(stack, children)
	}
	if i != len(b) {
		return fmt.Errorf("%d trailing bytes after msgpack value", len(b)-i)
	}
	return nil
}
