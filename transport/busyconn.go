package transport

import (
	"net"
	"sync"
	"time"
)

// handlers counts inbound raft connections whose reader is handling a
// request: between a Read that returned data and the reader's next Read or
// Close. raft serves heartbeats on the connection's own goroutine, outside
// raft's main loop, and that path writes the stable store (the current
// term) without holding anything Shutdown waits for; Close waits for these
// handlers so that the caller may close the stores once Close returns.
type handlers struct {
	mu sync.Mutex
	n  int
}

func (h *handlers) add(d int) {
	h.mu.Lock()
	h.n += d
	h.mu.Unlock()
}

// count returns how many requests are being handled.
func (h *handlers) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// wait polls until no handler is running or max has passed; it reports
// whether none is running.
func (h *handlers) wait(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		if h.count() == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// busyConn is an inbound raft connection as raft's reader sees it: it
// counts the reader busy from a Read that returned data until its next
// Read or its Close (raft's handleConn closes the connection when it
// stops). The Transport closes the underlying connection directly, which
// makes the reader's next Read fail without ending a request in progress.
type busyConn struct {
	net.Conn
	h    *handlers
	busy bool
	mu   sync.Mutex
}

func (c *busyConn) Read(b []byte) (int, error) {
	c.idle()
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		if !c.busy {
			c.busy = true
			c.h.add(1)
		}
		c.mu.Unlock()
	}
	return n, err
}

// idle ends the current request, if any.
func (c *busyConn) idle() {
	c.mu.Lock()
	if c.busy {
		c.busy = false
		c.h.add(-1)
	}
	c.mu.Unlock()
}

// Close closes the connection; a reader that closes it is done handling.
func (c *busyConn) Close() error {
	c.idle()
	return c.Conn.Close()
}
