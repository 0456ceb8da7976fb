package transport

import (
	"errors"
	"net"
	"sync"
)

// trackedConn is a connection the Transport closes on Close. Its Close
// removes it from the Transport's set. Conn is the raw connection, or the
// TLS connection over it once the goroutine that owns the connection has
// completed a handshake (before it hands the connection on); Close closes
// raw, so it never races with that swap.
type trackedConn struct {
	net.Conn
	raw     net.Conn
	t       *Transport
	inbound bool
	secure  bool // Conn is TLS (outbound: the preamble carries our name)
	once    sync.Once
}

// Close closes the connection and forgets it; it is idempotent. Over TLS it
// closes the raw connection without a close_notify alert, which could block
// on a peer that does not read; the peer sees a clean EOF all the same.
func (c *trackedConn) Close() error {
	err := c.raw.Close()
	c.once.Do(func() { c.t.untrack(c) })
	return err
}

// track registers c, or closes it and fails when the Transport is closed or
// (for inbound conns) MaxInboundConns are open.
func (t *Transport) track(c *trackedConn) error {
	t.mu.Lock()
	err := error(nil)
	switch {
	case t.closed:
		err = ErrClosed
	case c.inbound && t.inbound >= t.cfg.MaxInboundConns:
		err = errTooManyConns
	default:
		t.conns[c] = struct{}{}
		if c.inbound {
			t.inbound++
		}
	}
	t.mu.Unlock()
	if err != nil {
		if err == errTooManyConns {
			// Counted before the close, so that a peer that sees its
			// connection refused finds the refusal in Stats.
			t.stats.rejectedConns.Add(1)
		}
		c.once.Do(func() {}) // never untracked
		_ = c.raw.Close()
	}
	return err
}

var errTooManyConns = errors.New("transport: too many inbound connections")

func (t *Transport) untrack(c *trackedConn) {
	t.mu.Lock()
	if _, ok := t.conns[c]; ok {
		delete(t.conns, c)
		if c.inbound {
			t.inbound--
		}
	}
	t.mu.Unlock()
}
