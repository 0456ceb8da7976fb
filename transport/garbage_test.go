package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// sendRaw dials addr, writes payload and waits (bounded) for the server to
// close the connection or for the write side to be done.
func sendRaw(t *testing.T, addr string, payload []byte, waitClose bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(payload); err != nil {
		return // the server may already have closed
	}
	if !waitClose {
		return
	}
	if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
		t.Fatalf("waiting for server to close: %v", err)
	}
}

// isReset reports a connection the peer closed abruptly (reset) rather
// than a timeout, which would mean the server kept it open.
func isReset(err error) bool {
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func frame(body []byte) []byte { return appendFrame(nil, body) }

func TestGarbageInput(t *testing.T) {
	srv := newTestTransport(t, "srv", echo, func(c *Config) { c.MaxFrameSize = 1 << 16 })
	cli := newTestTransport(t, "cli", nil)
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	huge := binary.BigEndian.AppendUint32([]byte{kindRPC}, 1<<31)
	cases := []struct {
		name      string
		payload   []byte
		waitClose bool
	}{
		{"unknown kind", []byte("GET / HTTP/1.1\r\n\r\n"), true},
		{"zero kind", []byte{0}, true},
		{"oversized length", huge, true},
		{"length just over limit", binary.BigEndian.AppendUint32([]byte{kindRPC}, 1<<16+1), true},
		{"truncated header", []byte{kindRPC, 0, 0}, false},
		{"truncated body", append(binary.BigEndian.AppendUint32([]byte{kindRPC}, 100), 1, 2, 3), false},
		{"garbage msgpack", append([]byte{kindRPC}, frame([]byte{0xc1, 0xc1})...), true},
		{"huge msgpack array", append([]byte{kindRPC}, frame([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})...), true},
		{"wrong msgpack type", append([]byte{kindRPC}, frame([]byte{0x01})...), true},
		{"empty frame", append([]byte{kindRPC}, frame(nil)...), true},
		{"raft truncated id", []byte{kindRaft, 200, 'x'}, false},
		{"raft wrong id", append([]byte{kindRaft, 3}, "zzz"...), true},
	}
	for i := range 20 {
		cases = append(cases, struct {
			name      string
			payload   []byte
			waitClose bool
		}{"random", append([]byte{kindRPC}, random(1+i*37)...), false})
		cases = append(cases, struct {
			name      string
			payload   []byte
			waitClose bool
		}{"random any kind", random(1 + i*53), false})
	}
	for _, tc := range cases {
		sendRaw(t, srv.Addr(), tc.payload, tc.waitClose)
		var got string
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cli.Call(ctx, srv.Addr(), "echo", "alive", &got)
		cancel()
		if err != nil || got != "alive" {
			t.Fatalf("after %s: Call = %q, %v", tc.name, got, err)
		}
	}
	st := srv.Stats()
	if st.OversizedFrames < 2 || st.BadFrames < 4 || st.BadHandshakes < 2 || st.WrongTarget < 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestHandshakeTimeout(t *testing.T) {
	srv := newTestTransport(t, "srv", echo, func(c *Config) { c.HandshakeTimeout = 100 * time.Millisecond })
	cli := newTestTransport(t, "cli", nil)
	// A silent peer and a peer stuck in the raft header.
	silent, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	stuck, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write([]byte{kindRaft, 5, 'a'}); err != nil {
		t.Fatal(err)
	}
	// Accept is not blocked meanwhile.
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []net.Conn{silent, stuck} {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
			t.Fatalf("read = %v, want EOF", err)
		}
	}
	testkit.Eventually(t, "handshake timeouts counted", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().BadHandshakes >= 2 }))
}

func TestMaxInboundConns(t *testing.T) {
	srv := newTestTransport(t, "srv", echo, func(c *Config) { c.MaxInboundConns = 2 })
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	testkit.Eventually(t, "two inbound conns", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().InboundConns == 2 }))
	extra, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Fatalf("read on refused conn = %v, want EOF", err)
	}
	if srv.Stats().RejectedConns != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
	// Freeing a slot lets RPC through again.
	_ = held[0].Close()
	held = held[1:]
	testkit.Eventually(t, "slot freed", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().InboundConns == 1 }))
	cli := newTestTransport(t, "cli", nil)
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 1, nil); err != nil {
		t.Fatal(err)
	}
}
