package membership

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	in := Meta{Version: 1, NodeID: "01HXYZ", RPCAddr: "10.0.0.1:7000", Voter: true, ClusterID: "c-42", Zone: "eu-1a"}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
	// A zero version is written as MetaVersion.
	b, _ = Meta{NodeID: "x"}.Encode()
	if out, err := DecodeMeta(b); err != nil || out.Version != MetaVersion {
		t.Fatalf("zero version: %+v, %v", out, err)
	}
}

func TestMetaTooLarge(t *testing.T) {
	if _, err := (Meta{Zone: strings.Repeat("z", MaxMetaSize)}).Encode(); err == nil {
		t.Fatal("Encode of an oversized meta succeeded")
	}
	if _, err := DecodeMeta(make([]byte, MaxMetaSize+1)); err == nil {
		t.Fatal("DecodeMeta of oversized input succeeded")
	}
	// The largest meta that fits still encodes.
	m := Meta{NodeID: strings.Repeat("i", 100), RPCAddr: strings.Repeat("r", 100),
		ClusterID: strings.Repeat("c", 100), Zone: strings.Repeat("z", 100)}
	if _, err := m.Encode(); err != nil {
		t.Fatalf("400 bytes of fields: %v", err)
	}
}

func TestDecodeMetaGarbage(t *testing.T) {
	good, _ := Meta{NodeID: "n", RPCAddr: "127.0.0.1:1", ClusterID: "c", Zone: "z"}.Encode()
	for i := range good {
		DecodeMeta(good[:i]) //nolint:errcheck // must not panic
	}
	if _, err := DecodeMeta(nil); err == nil {
		t.Error("DecodeMeta(nil) succeeded")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(MaxMetaSize+2))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		DecodeMeta(b) //nolint:errcheck // must not panic
		// Mutations of a valid encoding too.
		m := bytes.Clone(good)
		m[r.IntN(len(m))] = byte(r.Uint32())
		DecodeMeta(m) //nolint:errcheck // must not panic
	}
}

func FuzzDecodeMeta(f *testing.F) {
	good, _ := Meta{Version: 1, NodeID: "n", RPCAddr: "127.0.0.1:1", Voter: true, ClusterID: "c", Zone: "z"}.Encode()
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})                       // map32 with a huge length
	f.Add([]byte{0x81, 0xa2, 'i', 'd', 0xdb, 0xff, 0xff, 0xff, 0xff}) // str32 with a huge length
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes (it is no larger than a valid input,
		// modulo field encoding) and decodes to the same value.
		enc, err := m.Encode()
		if err != nil {
			return
		}
		m2, err := DecodeMeta(enc)
		if err != nil || m2 != m {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}

func TestParseLogLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=1", slog.LevelDebug, "Stream connection from=1"},
		{"[INFO] memberlist: hi", slog.LevelInfo, "hi"},
		{"[WARN] memberlist: careful", slog.LevelWarn, "careful"},
		{"[ERR] memberlist: broken", slog.LevelError, "broken"},
		{"[ERROR] x", slog.LevelError, "x"},
		{"no level", slog.LevelInfo, "no level"},
		{"[WHAT] y", slog.LevelInfo, "[WHAT] y"},
	} {
		level, msg := parseLogLine([]byte(c.in))
		if level != c.level || msg != c.msg {
			t.Errorf("parseLogLine(%q) = %v %q, want %v %q", c.in, level, msg, c.level, c.msg)
		}
	}
	var buf bytes.Buffer
	l := newStdLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Printf("[WARN] memberlist: something %d", 42)
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, `msg="something 42"`) {
		t.Errorf("bridged log = %q", got)
	}
}
