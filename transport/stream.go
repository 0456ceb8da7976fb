package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftAddress returns the raft server address "id@host:port" naming node id
// reachable at addr. With an empty id it returns addr unchanged, and the
// receiving side then skips its node-ID check.
func RaftAddress(addr, id string) raft.ServerAddress {
	if id == "" {
		return raft.ServerAddress(addr)
	}
	return raft.ServerAddress(id + "@" + addr)
}

// SplitRaftAddress splits a raft server address made by RaftAddress into its
// "host:port" and node ID. The ID is everything before the last '@' and may be
// empty (an address without '@'). It returns an error wrapping
// ErrInvalidAddress when the host:port part does not parse or the ID is
// longer than 255 bytes.
func SplitRaftAddress(a raft.ServerAddress) (addr, id string, err error) {
	s := string(a)
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		id, addr = s[:i], s[i+1:]
	} else {
		addr = s
	}
	if len(id) > 255 {
		return "", "", fmt.Errorf("%w: node ID in %q is longer than 255 bytes", ErrInvalidAddress, s)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", "", fmt.Errorf("%w: %q: %v", ErrInvalidAddress, s, err)
	}
	return addr, id, nil
}

// streamLayer is the raft.StreamLayer of a Transport: Accept yields inbound
// raft connections that passed the node-ID check; Dial opens outbound ones.
type streamLayer struct {
	t     *Transport
	conns chan net.Conn // unbuffered: a handshake goroutine waits for Accept
	done  chan struct{}
	once  sync.Once
}

func newStreamLayer(t *Transport) *streamLayer {
	return &streamLayer{t: t, conns: make(chan net.Conn), done: make(chan struct{})}
}

// StreamLayer returns the raft stream layer carried by this Transport, for
// raft.NewNetworkTransportWithConfig. Its Addr is RaftAddress(t.Addr(),
// LocalID). Its Close (called by raft's NetworkTransport.Close) only stops
// Accept, permanently; the Transport keeps serving RPC, and its own Close
// closes every raft connection in both directions. Every call returns the
// same layer.
func (t *Transport) StreamLayer() raft.StreamLayer { return t.stream }

// Accept waits for the next inbound raft connection. It returns ErrClosed
// once the layer or the Transport is closed.
func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, ErrClosed
	case <-s.t.ctx.Done():
		return nil, ErrClosed
	}
}

// Close stops Accept; it is idempotent.
func (s *streamLayer) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}

// Addr returns the advertised raft address "id@host:port".
func (s *streamLayer) Addr() net.Addr {
	return raftAddr(RaftAddress(s.t.addr, s.t.cfg.LocalID))
}

// SetRaftResolver makes raft connections to a node ID go to the address
// resolve returns for it (ok true), instead of the address raft's
// configuration holds: a node restarted on another address keeps its place
// in the configuration, and the others must reach it at the new one before
// a leader can write the new address into the configuration (an election
// may need it first). The raft header still names the target ID, so a
// node with another identity at the resolved address closes the connection,
// and with TLS the certificate must name the node TLS.PeerName expects for
// the resolved address and the ID. nil turns resolution off. resolve is
// called on every raft dial and must be fast.
func (t *Transport) SetRaftResolver(resolve func(id string) (addr string, ok bool)) {
	if resolve == nil {
		t.resolver.Store(nil)
		return
	}
	t.resolver.Store(&resolve)
}

// Dial connects to a raft address made by RaftAddress (or to the address
// the raft resolver gives for its ID, see SetRaftResolver) and sends the raft
// header naming the target node. A peer with another node ID closes the
// connection, so the first raft RPC on it fails. With Config.TLS, the TLS
// handshake completes within timeout first and Dial fails (wrapping
// ErrWrongPeer when the server's certificate names another node than
// TLS.PeerName expects for the address and ID).
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	addr, id, err := SplitRaftAddress(address)
	if err != nil {
		return nil, err
	}
	if r := s.t.resolver.Load(); r != nil && id != "" {
		if now, ok := (*r)(id); ok && now != "" {
			addr = now
		}
	}
	if timeout <= 0 {
		timeout = s.t.cfg.DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(s.t.ctx, timeout)
	defer cancel()
	c, err := s.t.dial(ctx, addr, id)
	if err != nil {
		return nil, fmt.Errorf("transport: raft dial %s: %w", address, err)
	}
	deadline, _ := ctx.Deadline()
	hdr := s.t.preamble(c, kindRaft)
	hdr = append(hdr, byte(len(id)))
	hdr = append(hdr, id...)
	_ = c.SetWriteDeadline(deadline)
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("transport: raft dial %s: write header: %w", address, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// deliver hands an accepted raft connection to Accept, or closes it when
// nobody accepts it within HandshakeTimeout (raft not running yet) or the
// layer or the Transport closes first.
func (s *streamLayer) deliver(c net.Conn) {
	timer := time.NewTimer(s.t.cfg.HandshakeTimeout)
	defer timer.Stop()
	select {
	case s.conns <- &busyConn{Conn: c, h: &s.t.raftHandlers}:
		return
	case <-timer.C:
		s.t.log.Debug("transport: raft connection not accepted in time", "remote", c.RemoteAddr().String())
	case <-s.done:
	case <-s.t.ctx.Done():
	}
	_ = c.Close()
}

// handshakeRaft reads the target node ID after the 'R' kind byte, refuses a
// connection for another node and hands the rest to the stream layer.
func (t *Transport) handshakeRaft(c *trackedConn) {
	var n [1]byte
	id := make([]byte, 0, 255)
	_, err := io.ReadFull(c, n[:])
	if err == nil {
		id = id[:n[0]]
		_, err = io.ReadFull(c, id)
	}
	if err != nil {
		t.stats.badHandshakes.Add(1)
		t.log.Debug("transport: raft handshake failed", "remote", c.RemoteAddr().String(), "error", err)
		_ = c.Close()
		return
	}
	target, local := string(id), t.cfg.LocalID
	if target != "" && local != "" && target != local {
		t.stats.wrongTarget.Add(1)
		t.log.Warn(fmt.Sprintf("transport: raft connection for node %s reached node %s", target, local),
			"target", target, "local", local, "remote", c.RemoteAddr().String())
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	t.stream.deliver(c)
}

// raftAddr is the net.Addr of the stream layer.
type raftAddr string

func (a raftAddr) Network() string { return "holdfast-raft" }
func (a raftAddr) String() string  { return string(a) }
