package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Connection kind bytes: the first byte of every connection.
const (
	kindRaft = 'R'
	kindRPC  = 'P'
)

// Stats is a snapshot of a Transport's counters of refused input.
type Stats struct {
	// RejectedConns counts inbound connections closed because
	// MaxInboundConns were already open; each is counted before it is
	// closed.
	RejectedConns uint64
	// BadHandshakes counts inbound connections closed before or while
	// reading their kind byte and header: timeout, EOF, unknown kind.
	BadHandshakes uint64
	// WrongTarget counts raft connections addressed to another node ID.
	WrongTarget uint64
	// OversizedFrames counts RPC frames (inbound or responses) whose length
	// prefix exceeded MaxFrameSize.
	OversizedFrames uint64
	// BadFrames counts RPC frames that could not be decoded.
	BadFrames uint64
	// TLSHandshakeFailures counts failed TLS handshakes in both directions:
	// inbound, a client without a certificate signed by the CAs, a timeout
	// or a protocol error; outbound, a server certificate not signed by the
	// CAs, or a peer that does not speak TLS while TLS is required.
	TLSHandshakeFailures uint64
	// PlaintextRefused counts inbound plaintext raft and RPC connections
	// closed because TLS.Required is set.
	PlaintextRefused uint64
	// WrongPeerName counts TLS peers refused because their certificate does
	// not name the node they claim to be (inbound) or the node dialled
	// (outbound, as TLS.PeerName names it).
	WrongPeerName uint64
	// PlaintextFallbacks counts outbound connections made in plaintext
	// because the peer closed the TLS handshake and TLS is not required.
	PlaintextFallbacks uint64
	// ForeignCluster counts inbound calls refused because the caller
	// belongs to another cluster (Config.Cluster).
	ForeignCluster uint64
	// InboundConns is the number of inbound connections open now.
	InboundConns int
}

// counters are the atomic fields behind Stats.
type counters struct {
	rejectedConns, badHandshakes, wrongTarget atomic.Uint64
	oversizedFrames, badFrames                atomic.Uint64
	tlsHandshakeFailures, plaintextRefused    atomic.Uint64
	wrongPeerName, plaintextFallbacks         atomic.Uint64
	foreignCluster                            atomic.Uint64
}

// Transport is one node's listener carrying both the raft stream layer and
// holdfast's RPC, plus the RPC client. All methods are safe for concurrent
// use.
type Transport struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	addr   string
	stream *streamLayer
	tls    *tlsState // nil without TLS

	handler  atomic.Pointer[handlerBox]
	resolver atomic.Pointer[func(id string) (string, bool)] // SetRaftResolver
	nextID   atomic.Uint64
	stats    counters

	ctx    context.Context // cancelled by Close; parent of handler contexts
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop and per-connection goroutines

	mu       sync.Mutex
	closed   bool
	conns    map[*trackedConn]struct{} // every open conn, both directions
	inbound  int                       // open inbound conns
	idle     map[string][]*trackedConn // pooled RPC client conns by address
	orphans  map[string]*dialing       // dials nobody waits for, by address (dialrpc.go)
	closeErr error
	once     sync.Once

	raftHandlers handlers // inbound raft requests being handled (busyconn.go)
}

type handlerBox struct{ h Handler }

// The first bytes memberlist's TCP streams start with: pushPull (6),
// user (8), compressed (9), encrypted (10), hasCrc (12). A connection of
// such a kind is a gossip join sent to the RPC port.
const (
	gossipFirstByteMin = 6
	gossipFirstByteMax = 12
)

// New validates cfg, listens on cfg.BindAddr and starts accepting. The
// Transport must be closed with Close.
func New(cfg Config) (*Transport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ln, err := cfg.Network.Listen(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s: %w", cfg.BindAddr, err)
	}
	t := &Transport{
		cfg:     cfg,
		log:     cfg.Logger,
		ln:      ln,
		addr:    cfg.AdvertiseAddr,
		conns:   make(map[*trackedConn]struct{}),
		idle:    make(map[string][]*trackedConn),
		orphans: make(map[string]*dialing),
	}
	if t.addr == "" {
		t.addr = ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(t.addr)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("transport: Config.AdvertiseAddr %q: %w", t.addr, err)
	}
	if port == "0" { // the bound port
		_, bound, _ := net.SplitHostPort(ln.Addr().String())
		t.addr = net.JoinHostPort(host, bound)
	}
	if cfg.TLS != nil {
		t.tls = newTLSState(*cfg.TLS)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.stream = newStreamLayer(t)
	t.SetHandler(cfg.Handler)
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// Addr returns the advertised "host:port" peers use to reach this Transport.
func (t *Transport) Addr() string { return t.addr }

// SetHandler sets (or, with nil, clears) the Handler serving inbound RPC.
// Requests already being served keep the previous Handler.
func (t *Transport) SetHandler(h Handler) {
	if h == nil {
		t.handler.Store(nil)
		return
	}
	t.handler.Store(&handlerBox{h})
}

// Handler returns the Handler serving inbound RPC, or nil while none is set.
// It synchronises with SetHandler: whatever the caller of SetHandler wrote
// before setting h is visible to a caller that gets h back.
func (t *Transport) Handler() Handler {
	if box := t.handler.Load(); box != nil {
		return box.h
	}
	return nil
}

// Stats returns a snapshot of the counters of refused connections and frames.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	inbound := t.inbound
	t.mu.Unlock()
	return Stats{
		RejectedConns:   t.stats.rejectedConns.Load(),
		BadHandshakes:   t.stats.badHandshakes.Load(),
		WrongTarget:     t.stats.wrongTarget.Load(),
		OversizedFrames: t.stats.oversizedFrames.Load(),
		BadFrames:       t.stats.badFrames.Load(),

		TLSHandshakeFailures: t.stats.tlsHandshakeFailures.Load(),
		PlaintextRefused:     t.stats.plaintextRefused.Load(),
		WrongPeerName:        t.stats.wrongPeerName.Load(),
		PlaintextFallbacks:   t.stats.plaintextFallbacks.Load(),
		ForeignCluster:       t.stats.foreignCluster.Load(),

		InboundConns: inbound,
	}
}

// Close stops the listener, closes every connection (inbound, pooled,
// in-flight and raft connections in both directions), cancels the contexts of
// running handlers and waits for the Transport's goroutines to end (so it
// waits for handlers to return), and for raft's readers of inbound raft
// connections to finish the request each is handling (raft answers
// heartbeats there and writes its stable store: close the stores only
// after Close). It is idempotent and safe to call
// concurrently; later calls return the first call's result.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		conns := make([]*trackedConn, 0, len(t.conns))
		for c := range t.conns {
			conns = append(conns, c)
		}
		t.idle = make(map[string][]*trackedConn)
		t.mu.Unlock()

		t.cancel()
		if err := t.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.closeErr = fmt.Errorf("transport: close listener: %w", err)
		}
		for _, c := range conns {
			_ = c.Close()
		}
		t.wg.Wait()
		if !t.raftHandlers.wait(t.cfg.HandshakeTimeout) {
			t.log.Warn("transport: raft requests still being handled at close")
		}
	})
	return t.closeErr
}

// isClosed reports whether Close has begun.
func (t *Transport) isClosed() bool {
	select {
	case <-t.ctx.Done():
		return true
	default:
		return false
	}
}

// dial opens a tracked outbound connection to addr, over TLS when
// configured; id is the raft node ID dialled ("" if none), for
// TLS.PeerName. Send t.preamble(c, kind) first on the new connection.
func (t *Transport) dial(ctx context.Context, addr, id string) (*trackedConn, error) {
	if t.isClosed() {
		return nil, ErrClosed
	}
	if t.tls != nil {
		return t.dialTLS(ctx, addr, id)
	}
	return t.dialRaw(ctx, addr)
}

// dialRaw opens a tracked plaintext connection to addr.
func (t *Transport) dialRaw(ctx context.Context, addr string) (*trackedConn, error) {
	raw, err := t.cfg.Network.DialContext(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &trackedConn{Conn: raw, raw: raw, t: t}
	if err := t.track(c); err != nil {
		return nil, err
	}
	return c, nil
}

// acceptLoop accepts inbound connections and starts a handshake goroutine for
// each, so that a silent peer never blocks Accept.
func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	var delay time.Duration
	for {
		raw, err := t.ln.Accept()
		if err != nil {
			if t.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.log.Warn("transport: accept failed", "error", err, "retry_in", delay)
			if !t.sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		c := &trackedConn{Conn: raw, raw: raw, t: t, inbound: true}
		if err := t.track(c); err != nil {
			if errors.Is(err, errTooManyConns) {
				t.log.Warn("transport: inbound connection refused", "remote", raw.RemoteAddr().String(), "error", err)
			}
			continue
		}
		t.wg.Add(1)
		go t.handshake(c)
	}
}

// sleep waits d or until Close; it reports false on Close.
func (t *Transport) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// handshake reads the kind byte (and the raft header) under HandshakeTimeout
// and dispatches the connection. With TLS configured, the first byte may
// instead start a TLS handshake, also bounded by HandshakeTimeout, after
// which the kind byte is read inside TLS (see acceptTLS).
func (t *Transport) handshake(c *trackedConn) {
	defer t.wg.Done()
	deadline := time.Now().Add(t.cfg.HandshakeTimeout)
	_ = c.SetReadDeadline(deadline)
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		t.stats.badHandshakes.Add(1)
		t.log.Debug("transport: handshake failed", "remote", c.RemoteAddr().String(), "error", err)
		_ = c.Close()
		return
	}
	if t.tls != nil {
		k, ok := t.acceptTLS(c, kind[0], deadline)
		if !ok {
			return
		}
		kind[0] = k
	}
	switch kind[0] {
	case kindRaft:
		t.handshakeRaft(c)
	case kindRPC:
		_ = c.SetReadDeadline(time.Time{})
		t.serveRPC(c)
	default:
		t.stats.badHandshakes.Add(1)
		args := []any{"remote", c.RemoteAddr().String(), "kind", kind[0]}
		if kind[0] >= gossipFirstByteMin && kind[0] <= gossipFirstByteMax {
			args = append(args, "hint", "this looks like gossip (memberlist): the node at remote has this RPC address "+
				"in its join list instead of a gossip address")
		}
		t.log.Warn("transport: unknown connection kind", args...)
		_ = c.Close()
	}
}
