package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// packetQueue is the number of packets a gossip transport buffers for
// memberlist; more are dropped, like a full UDP receive buffer.
const packetQueue = 1024

// errShutdown is returned by a gossip transport used after Shutdown.
var errShutdown = errors.New("memnet: gossip transport shut down")

// gossipTransport is a memberlist.NodeAwareTransport on a Network. Its
// packets go through the network's packet path (delay, loss, cuts) and its
// streams are ordinary memnet conns.
type gossipTransport struct {
	net       *Network
	ln        *listener
	host      string // canonical host name
	advertise Addr   // IP form of the bind address
	packets   chan *memberlist.Packet
	done      chan struct{}
	once      sync.Once
}

var _ memberlist.NodeAwareTransport = (*gossipTransport)(nil)

// newGossipTransport binds a packet port and a stream listener on bindAddr.
func (n *Network) newGossipTransport(bindAddr string) (*gossipTransport, error) {
	ln, err := n.listen(bindAddr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = ln.Close()
		return nil, ErrClosed
	}
	defer n.mu.Unlock()
	t := &gossipTransport{
		net:       n,
		ln:        ln,
		host:      ln.addr.Host,
		advertise: Addr{n.ipLocked(ln.addr.Host), ln.addr.Port},
		packets:   make(chan *memberlist.Packet, packetQueue),
		done:      make(chan struct{}),
	}
	n.gossip[ln.key] = t
	return t, nil
}

// FinalAdvertiseAddr returns the IP form of the bind address, ignoring the
// configured values: memberlist must advertise what the network routes.
func (t *gossipTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return net.ParseIP(t.advertise.Host), t.advertise.Port, nil
}

// WriteTo sends a packet to addr; see WriteToAddress.
func (t *gossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a copy of b to the gossip transport at a.Addr (host
// name or IP form). The packet is lost silently if the link is cut when it is
// sent or when it would arrive, by the loss probability, or if the
// receiver's queue is full. Otherwise it arrives after the link delay.
func (t *gossipTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	host, port, err := splitAddr(a.Addr)
	if err != nil {
		return time.Time{}, err
	}
	select {
	case <-t.done:
		return time.Time{}, errShutdown
	default:
	}
	now := time.Now()
	buf := append([]byte(nil), b...)
	n := t.net
	n.mu.Lock()
	to := n.canonLocked(host)
	if n.closed || !n.reachableLocked(t.host, to) || n.gossipCutLocked(t.host, to) || (n.loss > 0 && n.rng.Float64() < n.loss) {
		n.mu.Unlock()
		return now, nil
	}
	key := joinAddr(to, port)
	if d := n.delayLocked(t.host, to); d > 0 {
		n.schedule(d, func() { n.deliver(t, key, buf) })
		n.mu.Unlock()
		return now, nil
	}
	n.mu.Unlock()
	n.deliver(t, key, buf)
	return now, nil
}

// schedule runs f after d unless Close comes first. n.mu must be held and
// the network open.
func (n *Network) schedule(d time.Duration, f func()) {
	p := new(pendingPacket)
	n.timers.Add(1)
	n.pending[p] = struct{}{}
	p.timer = time.AfterFunc(d, func() {
		defer n.timers.Done()
		n.mu.Lock()
		_, ok := n.pending[p]
		delete(n.pending, p)
		n.mu.Unlock()
		if ok {
			f()
		}
	})
}

// deliver hands a packet to the transport bound at key if the link is up.
func (n *Network) deliver(from *gossipTransport, key string, buf []byte) {
	n.mu.Lock()
	dest := n.gossip[key]
	ok := dest != nil && !n.closed && n.reachableLocked(from.host, dest.host) && !n.gossipCutLocked(from.host, dest.host)
	n.mu.Unlock()
	if !ok {
		return
	}
	p := &memberlist.Packet{Buf: buf, From: from.advertise, Timestamp: time.Now()}
	select {
	case dest.packets <- p:
	default:
	}
}

// PacketCh returns the channel of received packets. It is never closed.
func (t *gossipTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// DialTimeout opens a stream to addr; see DialAddressTimeout.
func (t *gossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout opens a stream from the transport's host to a.Addr,
// with the semantics of Node.DialContext bounded by timeout.
func (t *gossipTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if host, _, err := splitAddr(a.Addr); err == nil {
		t.net.mu.Lock()
		cut := t.net.gossipCutLocked(t.host, t.net.canonLocked(host))
		t.net.mu.Unlock()
		if cut {
			return nil, fmt.Errorf("memnet: gossip to %s is muted", a.Addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return t.net.dial(ctx, t.host, a.Addr)
}

// StreamCh returns the channel of accepted streams. It is never closed.
func (t *gossipTransport) StreamCh() <-chan net.Conn { return t.ln.conns }

// Shutdown releases the packet port and the stream listener. Packets sent to
// the address afterwards are lost. Shutdown is idempotent.
func (t *gossipTransport) Shutdown() error {
	t.once.Do(func() {
		close(t.done)
		t.net.mu.Lock()
		if t.net.gossip[t.ln.key] == t {
			delete(t.net.gossip, t.ln.key)
		}
		t.net.mu.Unlock()
		_ = t.ln.Close()
	})
	return nil
}
