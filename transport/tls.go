package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
)

// tlsRecordHandshake is the first byte of a TLS ClientHello (the record
// type "handshake"); plaintext connections start with 'R' or 'P' instead.
const tlsRecordHandshake = 0x16

// TLS configures mutual TLS on a Transport (Config.TLS). Both directions
// authenticate: a server requires a client certificate signed by CAs, and a
// client verifies the server's certificate against CAs and, when PeerName
// knows the node it dials, that the certificate names that node. Node names
// are DNS subject alternative names (SANs), compared exactly.
type TLS struct {
	// NodeName is this node's name. The client sends it after the kind
	// byte; the server refuses a client whose certificate does not name
	// the node it claims. It must be one of Certificate's DNS SANs; at
	// most 255 bytes.
	NodeName string
	// Certificate is this node's certificate chain and private key,
	// presented in both directions, so it must be valid for server and
	// client authentication.
	Certificate tls.Certificate
	// CAs holds the certificate authorities that peers' certificates must
	// chain to.
	CAs *x509.CertPool
	// Required refuses plaintext: inbound connections that do not start a
	// TLS handshake are closed (counted in Stats.PlaintextRefused), and a
	// peer that does not answer in TLS is not retried in plaintext. When
	// false, plaintext inbound connections are served as without TLS and an
	// outbound connection falls back to plaintext when the peer closes the
	// connection on the TLS ClientHello (a node not yet migrated); use it
	// only while migrating a running cluster, since it lets anyone talk to
	// the node in plaintext.
	Required bool
	// PeerName, if set, names the node expected at addr, where id is the
	// raft node ID being dialled ("" for RPC and for raft addresses
	// without an ID). When it reports ok, the server's certificate must
	// name that node, or the connection is refused with ErrWrongPeer. When
	// it is nil or reports !ok, any node name signed by CAs is accepted.
	// It is called on every new outbound connection, concurrently, and
	// must not block.
	PeerName func(addr, id string) (name string, ok bool)
}

// validate reports the first invalid field of Config.TLS.
func (c *TLS) validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("transport: Config.TLS.NodeName is empty")
	case len(c.NodeName) > 255:
		return fmt.Errorf("transport: Config.TLS.NodeName is %d bytes, more than 255", len(c.NodeName))
	case len(c.Certificate.Certificate) == 0 || c.Certificate.PrivateKey == nil:
		return errors.New("transport: Config.TLS.Certificate has no certificate or no private key")
	case c.CAs == nil:
		return errors.New("transport: Config.TLS.CAs is nil")
	}
	leaf, err := leafOf(c.Certificate)
	if err != nil {
		return fmt.Errorf("transport: Config.TLS.Certificate: %w", err)
	}
	if !namesNode(leaf, c.NodeName) {
		return fmt.Errorf("transport: Config.TLS.Certificate names %q, not Config.TLS.NodeName %q", leaf.DNSNames, c.NodeName)
	}
	return nil
}

// leafOf returns the parsed leaf certificate of a chain.
func leafOf(c tls.Certificate) (*x509.Certificate, error) {
	if c.Leaf != nil {
		return c.Leaf, nil
	}
	return x509.ParseCertificate(c.Certificate[0])
}

// namesNode reports whether cert has name among its DNS SANs.
func namesNode(cert *x509.Certificate, name string) bool {
	return name != "" && slices.Contains(cert.DNSNames, name)
}

// tlsState is a Transport's TLS configuration. The certificate and CAs
// can be replaced at run time (Transport.SetTLSCertificate); every
// handshake uses those current when it starts.
type tlsState struct {
	cfg    TLS // Certificate and CAs as first configured; see cur
	cur    atomic.Pointer[tlsMaterial]
	server *tls.Config
}

// tlsMaterial is a certificate and the CAs that go with it.
type tlsMaterial struct {
	cert tls.Certificate
	cas  *x509.CertPool
}

func newTLSState(cfg TLS) *tlsState {
	s := &tlsState{cfg: cfg}
	s.cur.Store(&tlsMaterial{cert: cfg.Certificate, cas: cfg.CAs})
	s.server = &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			return &tls.Config{
				Certificates:           []tls.Certificate{m.cert},
				ClientAuth:             tls.RequireAndVerifyClientCert,
				ClientCAs:              m.cas,
				MinVersion:             tls.VersionTLS13,
				SessionTicketsDisabled: true, // every connection presents its certificate
			}, nil
		},
	}
	return s
}

// client returns the client configuration for dialling a server that must
// be node want ("" when unknown: any node the CAs signed).
func (s *tlsState) client(want string) *tls.Config {
	m := s.cur.Load()
	return &tls.Config{
		Certificates: []tls.Certificate{m.cert},
		MinVersion:   tls.VersionTLS13,
		// Chain and name are checked by VerifyConnection: the expected name
		// is a node name, not the dialled host.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(cs.PeerCertificates, m.cas, want)
		},
	}
}

// SetTLSCertificate replaces the certificate this transport presents and
// the CAs it verifies peers against, for every handshake that starts
// afterwards; connections already open keep theirs. It fails, changing
// nothing, when the transport runs without TLS or cert is unusable (no key,
// or it does not name Config.TLS.NodeName).
func (t *Transport) SetTLSCertificate(cert tls.Certificate, cas *x509.CertPool) error {
	if t.tls == nil {
		return errors.New("transport: SetTLSCertificate: the transport runs without TLS")
	}
	next := t.tls.cfg
	next.Certificate, next.CAs = cert, cas
	if err := next.validate(); err != nil {
		return err
	}
	t.tls.cur.Store(&tlsMaterial{cert: cert, cas: cas})
	return nil
}

// verifyServer checks a server's chain against cas for server auth and, when
// want is set, that its certificate names want.
func verifyServer(chain []*x509.Certificate, cas *x509.CertPool, want string) error {
	if len(chain) == 0 {
		return errors.New("transport: server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	opts := x509.VerifyOptions{Roots: cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("transport: server certificate: %w", err)
	}
	if want != "" && !namesNode(leaf, want) {
		return fmt.Errorf("%w: dialled node %q, certificate names %q", ErrWrongPeer, want, leaf.DNSNames)
	}
	return nil
}

// acceptTLS runs the server side of an inbound connection whose first byte
// is first, when TLS is configured. A TLS ClientHello leads to a handshake
// requiring a client certificate, then the kind byte and the client's node
// name are read inside TLS and the name checked against the certificate;
// plaintext is passed through, or refused when TLS is required. It returns
// the connection kind, or ok false after closing the connection.
func (t *Transport) acceptTLS(c *trackedConn, first byte, deadline time.Time) (kind byte, ok bool) {
	remote := c.RemoteAddr().String()
	if first != tlsRecordHandshake {
		if t.tls.cfg.Required && (first == kindRaft || first == kindRPC) {
			t.stats.plaintextRefused.Add(1)
			t.log.Warn("transport: plaintext connection refused: TLS is required", "remote", remote, "kind", string(rune(first)))
			_ = c.Close()
			return 0, false
		}
		return first, true // plaintext, served as without TLS
	}
	tc := tls.Server(&prefixConn{Conn: c.raw, first: []byte{first}}, t.tls.server)
	_ = c.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		if !t.isClosed() {
			t.stats.tlsHandshakeFailures.Add(1)
			t.log.Warn("transport: inbound TLS handshake failed", "remote", remote, "error", err)
		}
		_ = c.Close()
		return 0, false
	}
	c.Conn = tc
	var hdr [2]byte // kind byte, length of the client's node name
	name := make([]byte, 0, 255)
	_, err := io.ReadFull(c, hdr[:])
	if err == nil {
		name = name[:hdr[1]]
		_, err = io.ReadFull(c, name)
	}
	if err != nil {
		t.stats.badHandshakes.Add(1)
		t.log.Debug("transport: handshake failed", "remote", remote, "error", err)
		_ = c.Close()
		return 0, false
	}
	leaf := tc.ConnectionState().PeerCertificates[0]
	if !namesNode(leaf, string(name)) {
		t.stats.wrongPeerName.Add(1)
		t.log.Warn(fmt.Sprintf("transport: peer claiming to be node %q presented a certificate for %q", name, leaf.DNSNames),
			"claimed", string(name), "certificate_names", leaf.DNSNames, "remote", remote)
		_ = c.Close()
		return 0, false
	}
	_ = c.SetWriteDeadline(time.Time{})
	return hdr[0], true
}

// prefixConn replays bytes already read from Conn before reading on.
type prefixConn struct {
	net.Conn
	first []byte
}

// Read returns the replayed bytes first.
func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// secure runs the client side of a TLS handshake on a new outbound
// connection to addr (node id when known) and, on success, makes c carry
// TLS. On failure c is closed.
func (t *Transport) secure(ctx context.Context, c *trackedConn, addr, id string) error {
	want := ""
	if f := t.tls.cfg.PeerName; f != nil {
		if name, ok := f(addr, id); ok {
			want = name
		}
	}
	return t.secureAs(ctx, c, want)
}

// secureAs runs the client side of a TLS handshake on c, requiring the
// server's certificate to name want ("" for any node the CAs signed).
func (t *Transport) secureAs(ctx context.Context, c *trackedConn, want string) error {
	tc := tls.Client(c.raw, t.tls.client(want))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return err
	}
	c.Conn, c.secure = tc, true
	return nil
}

// dialTLS opens a TLS connection to addr, or a plaintext one when TLS is
// not required and the peer does not speak TLS. Refusals are counted and
// logged.
func (t *Transport) dialTLS(ctx context.Context, addr, id string) (*trackedConn, error) {
	c, err := t.dialRaw(ctx, addr)
	if err != nil {
		return nil, err
	}
	err = t.secure(ctx, c, addr, id)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil || t.isClosed() {
		return nil, err
	}
	if !t.tls.cfg.Required && notTLSPeer(err) {
		c, err2 := t.dialRaw(ctx, addr)
		if err2 != nil {
			return nil, err2
		}
		t.stats.plaintextFallbacks.Add(1)
		t.log.Warn("transport: peer closed the TLS handshake; using plaintext since TLS is not required", "addr", addr, "error", err)
		return c, nil
	}
	if errors.Is(err, ErrWrongPeer) {
		t.stats.wrongPeerName.Add(1)
	} else {
		t.stats.tlsHandshakeFailures.Add(1)
	}
	t.log.Warn("transport: outbound TLS handshake failed", "addr", addr, "id", id, "error", err)
	return nil, fmt.Errorf("TLS handshake: %w", err)
}

// notTLSPeer reports a handshake that failed because the peer closed the
// connection on the ClientHello, as a plaintext-only node does.
func notTLSPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// preamble returns what a client sends first on a new connection of kind:
// the kind byte and, over TLS, this node's name as a length byte and bytes.
func (t *Transport) preamble(c *trackedConn, kind byte) []byte {
	if !c.secure {
		return []byte{kind}
	}
	name := t.tls.cfg.NodeName
	b := make([]byte, 0, 2+len(name))
	b = append(b, kind, byte(len(name)))
	return append(b, name...)
}

// VerifyPeer proves that the node listening at addr is node: it opens a new
// connection, completes a mutual TLS handshake in which the server must
// present a certificate that chains to the CAs, is valid for server auth
// and names node, sends the RPC preamble (so the server, which verified
// this side's certificate in turn, sees a well-formed client) and closes
// the connection. It does not consult TLS.PeerName.
//
// It returns nil on success; ErrNoTLS without Config.TLS; an error wrapping
// ErrWrongPeer when the certificate names another node; one wrapping
// ErrPlaintextPeer when the peer closed the connection on the ClientHello
// (a node without TLS); and otherwise the dial or handshake error. Failed
// handshakes are counted in Stats as those of other outbound connections.
func (t *Transport) VerifyPeer(ctx context.Context, addr, node string) error {
	if t.tls == nil {
		return ErrNoTLS
	}
	if node == "" {
		return fmt.Errorf("%w: no node name to verify at %s", ErrWrongPeer, addr)
	}
	if t.isClosed() {
		return ErrClosed
	}
	c, err := t.dialRaw(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.raw.SetDeadline(dl)
	}
	if err := t.secureAs(ctx, c, node); err != nil {
		switch {
		case notTLSPeer(err):
			return fmt.Errorf("%w: %s: %v", ErrPlaintextPeer, addr, err)
		case errors.Is(err, ErrWrongPeer):
			t.stats.wrongPeerName.Add(1)
		default:
			t.stats.tlsHandshakeFailures.Add(1)
		}
		return fmt.Errorf("verifying node %q at %s: %w", node, addr, err)
	}
	if _, err := c.Write(t.preamble(c, kindRPC)); err != nil {
		return fmt.Errorf("verifying node %q at %s: %w", node, addr, err)
	}
	return nil
}
