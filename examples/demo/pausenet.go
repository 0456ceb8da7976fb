package main

import (
	"context"
	"net"
	"sync"

	"github.com/holdfast-go/holdfast/transport"
)

// pausableNet is real TCP (transport.TCP) with a switch that makes its node
// look like a stopped process to the rest of the cluster: while it is
// paused, Read and Write on every connection the node dialed or accepted
// block, and new dials wait. The kernel still completes handshakes and
// buffers bytes, as it does for a process under SIGSTOP; nothing reaches
// the node's code and nothing leaves it.
//
// Gossip does not go through it (only a transport.GossipNetwork carries
// gossip), so the paused node still looks alive to memberlist. That does
// not save it: a session lives on keepalives answered by the raft leader,
// and those travel over this network.
//
// Deadlines are not honoured while paused, on purpose: a stopped process
// does not notice time passing either. Close unblocks, so nothing leaks if
// a node is closed while paused. It is safe for concurrent use.
type pausableNet struct {
	tcp transport.Network

	mu      sync.Mutex
	resumed chan struct{} // nil while running; closed by resume
}

var _ transport.Network = (*pausableNet)(nil)

func newPausableNet() *pausableNet { return &pausableNet{tcp: transport.TCP()} }

// pause stops the node's I/O until resume.
func (n *pausableNet) pause() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resumed == nil {
		n.resumed = make(chan struct{})
	}
}

// resume lets every blocked Read, Write and dial go on. It is idempotent.
func (n *pausableNet) resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resumed != nil {
		close(n.resumed)
		n.resumed = nil
	}
}

// wait blocks while the network is paused; it returns false if stop ends
// first.
func (n *pausableNet) wait(stop <-chan struct{}) bool {
	n.mu.Lock()
	resumed := n.resumed
	n.mu.Unlock()
	if resumed == nil {
		return true
	}
	select {
	case <-resumed:
		return true
	case <-stop:
		return false
	}
}

// Listen listens on real TCP; accepted connections are pausable.
func (n *pausableNet) Listen(addr string) (net.Listener, error) {
	ln, err := n.tcp.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &pausableListener{Listener: ln, net: n}, nil
}

// DialContext waits while the network is paused (or until ctx ends), then
// dials real TCP.
func (n *pausableNet) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	if !n.wait(ctx.Done()) {
		return nil, ctx.Err()
	}
	c, err := n.tcp.DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	return newPausableConn(c, n), nil
}

type pausableListener struct {
	net.Listener
	net *pausableNet
}

func (l *pausableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newPausableConn(c, l.net), nil
}

// pausableConn blocks Read and Write while its network is paused.
type pausableConn struct {
	net.Conn
	net    *pausableNet
	closed chan struct{}
	once   sync.Once
}

func newPausableConn(c net.Conn, n *pausableNet) *pausableConn {
	return &pausableConn{Conn: c, net: n, closed: make(chan struct{})}
}

// Read also waits after reading: a Read already blocked in the kernel when
// the pause began must not hand the paused node the bytes that arrive.
func (c *pausableConn) Read(b []byte) (int, error) {
	if !c.net.wait(c.closed) {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if !c.net.wait(c.closed) {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *pausableConn) Write(b []byte) (int, error) {
	if !c.net.wait(c.closed) {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

func (c *pausableConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
