package transport

import (
	"context"
	"sync"
	"time"
)

// A new RPC connection is opened in full (TCP, the TLS handshake, the
// preamble) whether or not the caller waits for it to the end. A caller
// whose context ends first returns at once; the dial goes on in the
// background, bounded by HandshakeTimeout, and the connection goes to the
// idle pool. Cutting it off instead would leave the server with a
// connection that closed during its TLS handshake, or before it sent its
// kind byte, which the server counts as a refused connection
// (Stats.TLSHandshakeFailures, Stats.BadHandshakes) although nothing but
// the caller's impatience was wrong: a confirmation round that already has
// its quorum, a forward abandoned when the leader changed. The next caller
// for the address waits for such a dial rather than starting another, so
// callers that keep giving up on a slow or dead peer leave at most one
// dial per address behind. Only Close cuts a dial off.

// dialing is one dial in progress, handed from its goroutine to the caller
// that waits for it, or to the pool when none does.
type dialing struct {
	mu        sync.Mutex
	done      chan struct{} // closed once c and err are set
	c         *trackedConn
	err       error
	abandoned bool // nobody waits: the dial pools its connection
}

// dialRPC opens a new RPC connection to addr with its preamble sent, or
// takes over a dial to addr a caller gave up on. It returns ctx's error as
// soon as ctx ends, leaving the dial to complete in the background.
func (t *Transport) dialRPC(ctx context.Context, addr string) (*trackedConn, error) {
	d, err := t.claimOrDial(addr)
	if err != nil {
		return nil, err
	}
	select {
	case <-d.done:
		return d.c, d.err
	case <-ctx.Done():
	}
	d.mu.Lock()
	select {
	case <-d.done: // done just now
		d.mu.Unlock()
		if d.err == nil {
			t.putConn(addr, d.c)
		}
		return nil, ctx.Err()
	default:
	}
	d.abandoned = true
	d.mu.Unlock()
	t.mu.Lock()
	if !t.closed && t.orphans[addr] == nil {
		t.orphans[addr] = d
	}
	t.mu.Unlock()
	return nil, ctx.Err()
}

// claimOrDial returns a dial to addr for the caller: one given up on and
// still under way, or a new one.
func (t *Transport) claimOrDial(addr string) (*dialing, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if d := t.orphans[addr]; d != nil {
		delete(t.orphans, addr)
		d.mu.Lock()
		claimed := false
		select {
		case <-d.done: // finished meanwhile: its connection is in the pool
		default:
			d.abandoned, claimed = false, true
		}
		d.mu.Unlock()
		if claimed {
			return d, nil
		}
	}
	d := &dialing{done: make(chan struct{})}
	t.wg.Add(1) // under t.mu, so never after Close began to wait
	go t.runDial(d, addr)
	return d, nil
}

// runDial dials addr for d within HandshakeTimeout (and until Close),
// sends the RPC preamble, and hands the connection over: to the caller
// waiting for d, or to the idle pool when there is none.
func (t *Transport) runDial(d *dialing, addr string) {
	defer t.wg.Done()
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	c, err := t.dial(ctx, addr, "")
	if err == nil {
		deadline, _ := ctx.Deadline()
		_ = c.SetWriteDeadline(deadline)
		_, err = c.Write(t.preamble(c, kindRPC))
		_ = c.SetWriteDeadline(time.Time{})
		if err != nil {
			_ = c.Close()
			c = nil
		}
	}
	d.mu.Lock()
	d.c, d.err = c, err
	abandoned := d.abandoned
	close(d.done)
	d.mu.Unlock()
	t.mu.Lock()
	if t.orphans[addr] == d {
		delete(t.orphans, addr)
	}
	t.mu.Unlock()
	if abandoned && c != nil {
		t.putConn(addr, c)
	}
}
