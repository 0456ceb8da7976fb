package transport

import (
	"github.com/holdfast-go/holdfast/internal/codec"

	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzReadFrame decodes a request frame from arbitrary bytes: it must never
// panic, never allocate past the limit, and round-trip what it accepts.
func FuzzReadFrame(f *testing.F) {
	good, _ := Encode(rpcRequest{ID: 9, Method: "echo", Timeout: 5, Body: []byte{0x01}})
	f.Add(frame(good))
	f.Add(frame(nil))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(frame([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}))
	f.Add(frame([]byte{0xdf, 0x7f, 0xff, 0xff, 0xff}))
	f.Add(frame(bytes.Repeat([]byte{0x91}, 1000)))
	f.Add(frame([]byte{0x84, 0xa1, 'i', 0x01, 0xa1, 'm', 0xa0, 0xa1, 'b', 0xc4, 0x00, 0xa1, 't', 0x00}))
	f.Add(frame([]byte{0xc7, 0x08, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 12
		req, err := readRequest(bytes.NewReader(data), limit)
		if err != nil {
			return
		}
		if n := binary.BigEndian.Uint32(data); n > limit || int(n) > len(data)-4 {
			t.Fatalf("accepted a frame of length %d from %d bytes", n, len(data))
		}
		again, err := Encode(req)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back rpcRequest
		if err := Decode(again, &back); err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if back.ID != req.ID || back.Method != req.Method || !bytes.Equal(back.Body, req.Body) {
			t.Fatalf("round trip %+v != %+v", back, req)
		}
	})
}

func TestDecodeRejects(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x91}, codec.MaxDepth+1), 0x00)
	cases := map[string][]byte{
		"empty":          nil,
		"invalid byte":   {0xc1},
		"trailing":       {0x01, 0x02},
		"truncated str":  {0xa5, 'a'},
		"huge array":     {0xdd, 0xff, 0xff, 0xff, 0xff},
		"huge map":       {0xdf, 0xff, 0xff, 0xff, 0xff, 0x00},
		"too deep":       deep,
		"truncated bin":  {0xc6, 0x7f, 0xff, 0xff, 0xff},
		"truncated u64":  {0xcf, 0x00},
		"truncated hdr":  {0xdc, 0x00},
		"truncated ext":  {0xd8, 0x01},
		"short fixarray": {0x93, 0x01},
	}
	for name, in := range cases {
		var v any
		if err := Decode(in, &v); err == nil {
			t.Errorf("%s: Decode accepted %x", name, in)
		}
		var s []struct{ A, B, C int }
		if err := Decode(in, &s); err == nil {
			t.Errorf("%s: Decode into slice accepted %x", name, in)
		}
	}
	if err := Decode(make([]byte, MaxDecodeSize+1), new(any)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized input: %v", err)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	type inner struct {
		Tags map[string]int
		List []string
	}
	type value struct {
		N     int64
		F     float64
		S     string
		B     []byte
		Ok    bool
		Ptr   *inner
		Items []inner
	}
	in := value{N: -5, F: 1.5, S: "s", B: []byte{1, 2}, Ok: true,
		Ptr:   &inner{Tags: map[string]int{"a": 1}, List: []string{"x"}},
		Items: []inner{{List: []string{"y", "z"}}}}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	var out value
	if err := Decode(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.N != in.N || out.S != in.S || !out.Ok || out.Ptr.Tags["a"] != 1 || out.Items[0].List[1] != "z" {
		t.Fatalf("round trip: %+v", out)
	}
	if _, err := Encode(make(chan int)); err == nil {
		t.Fatal("Encode(chan) succeeded")
	}
	if err := Decode(b, value{}); err == nil {
		t.Fatal("Decode into non-pointer succeeded")
	}
}

// FuzzDecode feeds arbitrary msgpack to Decode with several targets.
func FuzzDecode(f *testing.F) {
	good, _ := Encode(map[string]any{"a": []any{1, "x", []byte{2}}, "b": nil})
	f.Add(good)
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc7, 0x01, 0xff, 0x00})
	f.Add([]byte{0xd6, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var a any
		_ = Decode(data, &a)
		var s []struct{ A, B, C int64 }
		_ = Decode(data, &s)
		var m map[string][]string
		_ = Decode(data, &m)
		var r rpcResponse
		_ = Decode(data, &r)
	})
}
