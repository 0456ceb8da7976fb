package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

// backlog is the number of dialed connections a listener queues before
// Accept takes them; further dials wait.
const backlog = 128

// Node is the network as seen from one host. It implements
// transport.Network and transport.GossipNetwork for that host.
type Node struct {
	net  *Network
	host string
}

// Host returns the host name of the node.
func (nd *Node) Host() string { return nd.host }

// Listen opens a stream listener on addr. The host part must be empty or name
// the node's host (or its fake IP); port 0 picks a free port.
func (nd *Node) Listen(addr string) (net.Listener, error) {
	addr, err := nd.own(addr)
	if err != nil {
		return nil, err
	}
	return nd.net.Listen(addr)
}

// DialContext connects from the node's host to addr. With no listener on addr
// it fails at once with ECONNREFUSED. While either direction between the two
// hosts is cut (partition, one-way drop, pause of either host) it waits, like
// a TCP handshake whose SYNs are lost, until the link heals or ctx ends; then
// it fails with an error whose Timeout() is true if ctx's deadline passed.
// The handshake itself takes the round-trip delay of the link.
func (nd *Node) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	return nd.net.dial(ctx, nd.host, addr)
}

// GossipTransport returns a memberlist transport bound to bindAddr, whose
// host part must be empty or name the node's host.
func (nd *Node) GossipTransport(bindAddr string) (memberlist.NodeAwareTransport, error) {
	addr, err := nd.own(bindAddr)
	if err != nil {
		return nil, err
	}
	return nd.net.GossipTransport(addr)
}

// own checks that addr is on the node's host and fills in an empty host.
func (nd *Node) own(addr string) (string, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return "", err
	}
	if host == "" {
		return joinAddr(nd.host, port), nil
	}
	if nd.net.canon(host) != nd.net.canon(nd.host) {
		return "", fmt.Errorf("memnet: address %q is not on host %q", addr, nd.host)
	}
	return addr, nil
}

// listener accepts conns dialed to its address.
type listener struct {
	net     *Network
	addr    Addr
	key     string
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex // held for reading by enqueuers; write-locked by Close
	stopped bool
}

// listen registers a listener on addr.
func (n *Network) listen(addr string) (*listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		return nil, fmt.Errorf("memnet: address %q has no host", addr)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	host = n.canonLocked(host)
	if port == 0 {
		port = n.freePortLocked(host)
	}
	key := joinAddr(host, port)
	if _, ok := n.listeners[key]; ok {
		return nil, &net.OpError{Op: "listen", Net: "memnet", Addr: Addr{host, port}, Err: syscall.EADDRINUSE}
	}
	l := &listener{net: n, addr: Addr{host, port}, key: key,
		conns: make(chan net.Conn, backlog), done: make(chan struct{})}
	n.listeners[key] = l
	return l, nil
}

// Accept waits for and returns the next connection dialed to the listener.
// After Close it returns an error wrapping net.ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "memnet", Addr: l.addr, Err: net.ErrClosed}
	default:
	}
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "memnet", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops the listener, closes connections not yet accepted and frees
// the address. Close is idempotent.
func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
	drain:
		for {
			select {
			case c := <-l.conns:
				_ = c.Close()
			default:
				break drain
			}
		}
		l.net.mu.Lock()
		if l.net.listeners[l.key] == l {
			delete(l.net.listeners, l.key)
		}
		l.net.mu.Unlock()
	})
	return nil
}

// Addr returns the listener's address.
func (l *listener) Addr() net.Addr { return l.addr }

// enqueue hands c to Accept, waiting while the backlog is full.
func (l *listener) enqueue(ctx context.Context, c net.Conn) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.stopped {
		return syscall.ECONNREFUSED
	}
	select {
	case l.conns <- c:
		return nil
	case <-l.done:
		return syscall.ECONNREFUSED
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// dial connects from host from to addr; see Node.DialContext.
func (n *Network) dial(ctx context.Context, from, addr string) (net.Conn, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	from, to := n.canonLocked(from), n.canonLocked(host)
	local := Addr{from, n.freePortLocked(from)}
	remote := Addr{to, port}
	n.mu.Unlock()
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "memnet", Source: local, Addr: remote, Err: err}
	}
	if n.lookupListener(remote) == nil {
		return nil, opErr(syscall.ECONNREFUSED)
	}
	if err := n.handshake(ctx, from, to); err != nil {
		return nil, opErr(err)
	}
	l := n.lookupListener(remote)
	if l == nil {
		return nil, opErr(syscall.ECONNREFUSED)
	}
	mine, theirs, err := n.newPair(local, remote)
	if err != nil {
		return nil, opErr(err)
	}
	if err := l.enqueue(ctx, theirs); err != nil {
		_ = mine.Close()
		_ = theirs.Close()
		return nil, opErr(err)
	}
	return mine, nil
}

// lookupListener returns the listener on a, or nil.
func (n *Network) lookupListener(a Addr) *listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listeners[a.String()]
}

// handshake waits until both directions between from and to are up, then for
// the round-trip delay.
func (n *Network) handshake(ctx context.Context, from, to string) error {
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return ErrClosed
		}
		up := n.reachableLocked(from, to) && n.reachableLocked(to, from)
		changed := n.changed
		var rtt time.Duration
		if up {
			rtt = n.delayLocked(from, to) + n.delayLocked(to, from)
		}
		n.mu.Unlock()
		if up && rtt == 0 {
			return nil
		}
		if up {
			return sleepCtx(ctx, rtt)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctxErr(ctx)
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// ctxErr maps a context's end to a net-style error: a passed deadline is
// os.ErrDeadlineExceeded (Timeout() true).
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	return ctx.Err()
}
