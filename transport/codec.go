package transport

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/holdfast-go/holdfast/internal/codec"
)

// MaxDecodeSize is the largest input Decode accepts.
const MaxDecodeSize = 64 << 20

// Encode returns the msgpack encoding of v. It is the encoding Call uses for
// requests and responses.
func Encode(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("transport: encode %T: %w", v, err)
	}
	return b, nil
}

// Decode decodes exactly one msgpack value from b into v (a pointer). It is
// safe on arbitrary input: it rejects inputs larger than MaxDecodeSize (with
// ErrFrameTooLarge), inputs that are truncated, have trailing bytes, nest
// deeper than 256 levels or declare more array or map elements than there are
// bytes left, and it never panics. Such a check matters because msgpack
// decoders preallocate slices from the declared length.
func Decode(b []byte, v any) error {
	if len(b) > MaxDecodeSize {
		return fmt.Errorf("transport: decode: %d bytes exceeds %d: %w", len(b), MaxDecodeSize, ErrFrameTooLarge)
	}
	if err := codec.Decode(b, v); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	return nil
}
