package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipeCapacity is the number of unread bytes one direction of a stream
// buffers before Write blocks (the sum of two TCP socket buffers).
const pipeCapacity = 4 << 20

// Addr is the address of a memnet endpoint: a host and a port.
type Addr struct {
	Host string // host name or IP literal, as the network knows the host
	Port int    // port on that host
}

// Network returns "memnet".
func (a Addr) Network() string { return "memnet" }

// String returns "host:port".
func (a Addr) String() string { return joinAddr(a.Host, a.Port) }

// chunk is written data with the time it becomes readable.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe is one direction of a stream: the writer's host, the reader's host
// and the bytes in flight.
type pipe struct {
	net      *Network
	from, to string

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced on every state change
	buf     []chunk
	size    int
	lastAt  time.Time
	eof     bool // writer closed; EOF once buf is drained
	eofAt   time.Time
	wclosed bool // writer end closed locally
	rclosed bool // reader end closed; writes fail with ECONNRESET
	rdl     time.Time
	wdl     time.Time
}

func newPipe(n *Network, from, to string) *pipe {
	return &pipe{net: n, from: from, to: to, wake: make(chan struct{})}
}

// signalLocked wakes every reader and writer waiting on p.
func (p *pipe) signalLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// wait blocks until wake or faults fire, or d passes (d < 0: no timer).
func wait(wake, faults <-chan struct{}, d time.Duration) {
	if d < 0 {
		select {
		case <-wake:
		case <-faults:
		}
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
	case <-faults:
	case <-t.C:
	}
}

// read copies readable bytes into b, blocking until some are readable, EOF,
// the read deadline or close.
func (p *pipe) read(b []byte) (int, error) {
	for {
		up, faults := p.net.linkState(p.from, p.to)
		p.mu.Lock()
		if p.rclosed {
			p.mu.Unlock()
			return 0, net.ErrClosed
		}
		now := time.Now()
		if !p.rdl.IsZero() && !now.Before(p.rdl) {
			p.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		if len(b) == 0 {
			p.mu.Unlock()
			return 0, nil
		}
		d := time.Duration(-1)
		if up {
			if n := p.takeLocked(b, now); n > 0 {
				p.mu.Unlock()
				return n, nil
			}
			switch {
			case len(p.buf) > 0:
				d = p.buf[0].at.Sub(now)
			case p.eof && !now.Before(p.eofAt):
				p.mu.Unlock()
				return 0, io.EOF
			case p.eof:
				d = p.eofAt.Sub(now)
			}
		}
		if !p.rdl.IsZero() && (d < 0 || p.rdl.Sub(now) < d) {
			d = p.rdl.Sub(now)
		}
		wake := p.wake
		p.mu.Unlock()
		wait(wake, faults, d)
	}
}

// takeLocked moves the bytes readable at now into b.
func (p *pipe) takeLocked(b []byte, now time.Time) int {
	n := 0
	for n < len(b) && len(p.buf) > 0 && !now.Before(p.buf[0].at) {
		c := &p.buf[0]
		k := copy(b[n:], c.b)
		n += k
		c.b = c.b[k:]
		if len(c.b) == 0 {
			p.buf[0] = chunk{}
			p.buf = p.buf[1:]
		}
	}
	if n > 0 {
		p.size -= n
		p.signalLocked()
	}
	return n
}

// write queues b for the reader, blocking while the buffer is full.
func (p *pipe) write(b []byte) (int, error) {
	total := 0
	for len(b) > 0 {
		p.mu.Lock()
		switch {
		case p.wclosed:
			p.mu.Unlock()
			return total, net.ErrClosed
		case p.rclosed:
			p.mu.Unlock()
			return total, syscall.ECONNRESET
		}
		now := time.Now()
		if !p.wdl.IsZero() && !now.Before(p.wdl) {
			p.mu.Unlock()
			return total, os.ErrDeadlineExceeded
		}
		if space := pipeCapacity - p.size; space > 0 {
			k := min(space, len(b))
			p.appendLocked(b[:k], now)
			b = b[k:]
			total += k
			p.mu.Unlock()
			continue
		}
		d := time.Duration(-1)
		if !p.wdl.IsZero() {
			d = p.wdl.Sub(now)
		}
		wake := p.wake
		p.mu.Unlock()
		wait(wake, nil, d)
	}
	return total, nil
}

// appendLocked queues a copy of b, readable after the link delay and never
// before earlier data.
func (p *pipe) appendLocked(b []byte, now time.Time) {
	at := now.Add(p.net.streamDelay(p.from, p.to))
	if at.Before(p.lastAt) {
		at = p.lastAt
	}
	p.lastAt = at
	p.buf = append(p.buf, chunk{b: append([]byte(nil), b...), at: at})
	p.size += len(b)
	p.signalLocked()
}

// closeWriter sends EOF after the queued data.
func (p *pipe) closeWriter() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wclosed = true
	p.eof = true
	p.eofAt = time.Now().Add(p.net.streamDelay(p.from, p.to))
	if p.eofAt.Before(p.lastAt) {
		p.eofAt = p.lastAt
	}
	p.signalLocked()
}

// closeReader discards unread data; later writes fail.
func (p *pipe) closeReader() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rclosed = true
	p.buf = nil
	p.size = 0
	p.signalLocked()
}

// setDeadline sets the read or write deadline and wakes waiters.
func (p *pipe) setDeadline(t time.Time, read bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if read {
		p.rdl = t
	} else {
		p.wdl = t
	}
	p.signalLocked()
}

// conn is one end of an in-memory stream.
type conn struct {
	net           *Network
	local, remote Addr
	in, out       *pipe
	once          sync.Once
}

// Read reads data sent by the peer. It blocks until data is readable (after
// its delay, and while the link is up), EOF, the read deadline or Close.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.in.read(b)
	if err != nil && err != io.EOF {
		err = c.opErr("read", err)
	}
	return n, err
}

// Write queues b for the peer. It blocks only while 4 MiB are unread, until
// the write deadline or Close; a cut link does not block it.
func (c *conn) Write(b []byte) (int, error) {
	n, err := c.out.write(b)
	if err != nil {
		err = c.opErr("write", err)
	}
	return n, err
}

// Close closes both directions: the peer reads EOF after queued data, and
// its later writes fail. Close is idempotent.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.in.closeReader()
		c.out.closeWriter()
		c.net.forgetConn(c)
	})
	return nil
}

// LocalAddr returns the local endpoint.
func (c *conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's endpoint.
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both deadlines; see net.Conn.
func (c *conn) SetDeadline(t time.Time) error {
	c.in.setDeadline(t, true)
	c.out.setDeadline(t, false)
	return nil
}

// SetReadDeadline sets the read deadline; see net.Conn.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.in.setDeadline(t, true)
	return nil
}

// SetWriteDeadline sets the write deadline; see net.Conn.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.out.setDeadline(t, false)
	return nil
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "memnet", Source: c.local, Addr: c.remote, Err: err}
}

// newPair creates a connected pair of conns and registers both.
func (n *Network) newPair(a, b Addr) (*conn, *conn, error) {
	ab, ba := newPipe(n, a.Host, b.Host), newPipe(n, b.Host, a.Host)
	ca := &conn{net: n, local: a, remote: b, in: ba, out: ab}
	cb := &conn{net: n, local: b, remote: a, in: ab, out: ba}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, nil, ErrClosed
	}
	n.conns[ca] = struct{}{}
	n.conns[cb] = struct{}{}
	return ca, cb, nil
}

// forgetConn drops a closed conn from the registry.
func (n *Network) forgetConn(c *conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.conns, c)
}
