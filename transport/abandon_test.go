package transport

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// gatedNetwork is TCP whose dialled connections block every Read until
// open is closed (or the connection is): a handshake that stalls on the
// client's side for as long as the test wants.
type gatedNetwork struct {
	open chan struct{}
}

func (g gatedNetwork) Listen(addr string) (net.Listener, error) { return TCP().Listen(addr) }

func (g gatedNetwork) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	c, err := TCP().DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, open: g.open, closed: make(chan struct{})}, nil
}

type gatedConn struct {
	net.Conn
	open   chan struct{}
	once   sync.Once
	closed chan struct{}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	select {
	case <-c.open:
	case <-c.closed:
		return 0, net.ErrClosed
	}
	return c.Conn.Read(b)
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestCancelledCallAbandonsNoHandshake: a Call whose context ends while
// its new connection is still in the TLS handshake returns at once, but
// the handshake is not cut off: it completes in the background and the
// connection goes to the pool. The server counts no refused handshake (a
// caller that stops waiting, such as a confirmation round that already
// has its quorum, is not a stranger) and the next Call uses the
// connection.
func TestCancelledCallAbandonsNoHandshake(t *testing.T) {
	ca := newCA(t, "cluster CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))
	gate := gatedNetwork{open: make(chan struct{})}
	cli := newTestTransport(t, "id-c", nil, tlsNode(t, ca, "cli", true, nil, nil),
		func(c *Config) { c.Network = gate })
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- cli.Call(ctx, srv.Addr(), "echo", "x", nil) }()
	testkit.Eventually(t, "the handshake under way", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().InboundConns == 1 }))
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	close(gate.open)
	testkit.Eventually(t, "the connection pooled", 10*time.Second, testkit.Holds(func() bool {
		cli.mu.Lock()
		defer cli.mu.Unlock()
		return len(cli.idle[srv.Addr()]) == 1
	}))
	var out string
	if err := cli.Call(t.Context(), srv.Addr(), "echo", "y", &out); err != nil || out != "y" {
		t.Fatalf("Call after the abandoned one = %q, %v", out, err)
	}
	if st := srv.Stats(); st.TLSHandshakeFailures+st.BadHandshakes != 0 || st.InboundConns != 1 {
		t.Fatalf("server stats %+v: want no refused handshake and the one connection", st)
	}
}
