package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// keyPair returns a certificate for node name signed by ca.
func keyPair(t *testing.T, ca *certs.CA, name string) tls.Certificate {
	t.Helper()
	c, k, err := ca.NodeCert(name)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// peerBook maps raft IDs and addresses to node names, for TLS.PeerName.
type peerBook struct {
	mu    sync.Mutex
	names map[string]string
}

func (b *peerBook) set(key, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.names == nil {
		b.names = map[string]string{}
	}
	b.names[key] = name
}

func (b *peerBook) lookup(addr, id string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.names[id]; ok && id != "" {
		return n, true
	}
	n, ok := b.names[addr]
	return n, ok
}

// tlsNode configures a transport with a certificate for name from ca,
// trusting trust (ca when nil).
func tlsNode(t *testing.T, ca *certs.CA, name string, required bool, book *peerBook, trust *x509.CertPool) func(*Config) {
	if trust == nil {
		trust = ca.Pool()
	}
	cfg := &TLS{NodeName: name, Certificate: keyPair(t, ca, name), CAs: trust, Required: required}
	if book != nil {
		cfg.PeerName = book.lookup
	}
	return func(c *Config) { c.TLS = cfg }
}

// servedRaft starts raft's NetworkTransport on tr, answering raft RPCs
// until the test ends.
func servedRaft(t *testing.T, tr *Transport) *raft.NetworkTransport {
	nt := newRaftTransport(t, tr)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); serveRaft(nt, stop) }()
	t.Cleanup(func() { close(stop); <-done })
	return nt
}

// appendEntries sends one AppendEntries from na to the raft node id at addr.
func appendEntries(na *raft.NetworkTransport, addr, id string) error {
	var resp raft.AppendEntriesResponse
	err := na.AppendEntries(raft.ServerID(id), RaftAddress(addr, id), &raft.AppendEntriesRequest{Term: 3}, &resp)
	if err == nil && !resp.Success {
		err = errors.New("AppendEntries not successful")
	}
	return err
}

// expectEOF reads from c until the peer closes it (a clean EOF or a reset).
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
		t.Fatalf("waiting for the peer to close: %v", err)
	}
}

func TestTLSRaftAndRPC(t *testing.T) {
	ca := newCA(t, "cluster CA")
	var book peerBook
	a := newTestTransport(t, "id-a", echo, tlsNode(t, ca, "alpha", true, &book, nil))
	b := newTestTransport(t, "id-b", echo, tlsNode(t, ca, "beta", true, &book, nil))
	book.set("id-a", "alpha")
	book.set(a.Addr(), "alpha")
	book.set("id-b", "beta")
	book.set(b.Addr(), "beta")
	na := newRaftTransport(t, a)
	_ = servedRaft(t, b)
	for range 3 {
		if err := appendEntries(na, b.Addr(), "id-b"); err != nil {
			t.Fatalf("AppendEntries over TLS: %v", err)
		}
	}
	var got string
	if err := a.Call(t.Context(), b.Addr(), "echo", "over TLS", &got); err != nil || got != "over TLS" {
		t.Fatalf("Call a→b: %q, %v", got, err)
	}
	if err := b.Call(t.Context(), a.Addr(), "echo", "back", &got); err != nil || got != "back" {
		t.Fatalf("Call b→a: %q, %v", got, err)
	}
	// The wrong-target check still applies inside TLS.
	if err := appendEntries(na, b.Addr(), "id-c"); err == nil {
		t.Fatal("AppendEntries for another node ID succeeded")
	}
	testkit.Eventually(t, "wrong target counted", 10*time.Second, testkit.Holds(func() bool { return b.Stats().WrongTarget >= 1 }))
	for _, tr := range []*Transport{a, b} {
		if st := tr.Stats(); st.TLSHandshakeFailures+st.WrongPeerName+st.PlaintextRefused+st.PlaintextFallbacks != 0 {
			t.Fatalf("refusals between good peers: %+v", st)
		}
	}
}

func TestTLSOtherCARefused(t *testing.T) {
	ca, other := newCA(t, "cluster CA"), newCA(t, "other CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))

	// An intruder trusting only its own CA rejects the server's certificate.
	in := newTestTransport(t, "id-i", echo, tlsNode(t, other, "intruder", true, nil, nil))
	if err := in.Call(t.Context(), srv.Addr(), "echo", 1, nil); err == nil {
		t.Fatal("Call from another CA's node succeeded")
	}
	if _, err := in.StreamLayer().Dial(RaftAddress(srv.Addr(), "id-s"), 5*time.Second); err == nil {
		t.Fatal("raft Dial from another CA's node succeeded")
	}
	if got := in.Stats().TLSHandshakeFailures; got < 2 {
		t.Fatalf("intruder counted %d handshake failures, want 2", got)
	}

	// An intruder that trusts the cluster's CA but holds a certificate of
	// another CA is refused by the server, on RPC and on raft.
	in2 := newTestTransport(t, "id-j", echo, tlsNode(t, other, "intruder", true, nil, ca.Pool()))
	if err := in2.Call(t.Context(), srv.Addr(), "echo", 1, nil); err == nil {
		t.Fatal("Call with another CA's certificate succeeded")
	}
	_ = servedRaft(t, srv)
	n2 := newRaftTransport(t, in2)
	if err := appendEntries(n2, srv.Addr(), "id-s"); err == nil {
		t.Fatal("AppendEntries with another CA's certificate succeeded")
	}
	testkit.Eventually(t, "server counts refused handshakes", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().TLSHandshakeFailures >= 4 }))
	// The server still serves good peers.
	good := newTestTransport(t, "id-g", nil, tlsNode(t, ca, "good", true, nil, nil))
	if err := good.Call(t.Context(), srv.Addr(), "echo", 1, nil); err != nil {
		t.Fatalf("good peer after refusals: %v", err)
	}
}

func TestTLSWrongPeerNameRefused(t *testing.T) {
	ca := newCA(t, "cluster CA")
	var book peerBook
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))
	_ = newRaftTransport(t, srv)
	cli := newTestTransport(t, "id-c", nil, tlsNode(t, ca, "cli", true, &book, nil))

	// Client side: gossip says node "expected" lives at srv's address, but
	// srv's certificate names "srv".
	book.set(srv.Addr(), "expected")
	book.set("id-s", "expected")
	if err := cli.Call(t.Context(), srv.Addr(), "echo", 1, nil); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("Call to a server naming another node: %v, want ErrWrongPeer", err)
	}
	if _, err := cli.StreamLayer().Dial(RaftAddress(srv.Addr(), "id-s"), 5*time.Second); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("raft Dial to a server naming another node: %v, want ErrWrongPeer", err)
	}
	if got := cli.Stats().WrongPeerName; got != 2 {
		t.Fatalf("client WrongPeerName = %d, want 2", got)
	}
	book.set(srv.Addr(), "srv")
	book.set("id-s", "srv")
	if err := cli.Call(t.Context(), srv.Addr(), "echo", 1, nil); err != nil {
		t.Fatalf("Call once the name matches: %v", err)
	}

	// Server side: a client with a valid certificate for "mallory" that
	// claims to be "cli" is refused on RPC and on raft.
	mallory := keyPair(t, ca, "mallory")
	for _, preamble := range [][]byte{
		append([]byte{kindRPC, 3}, "cli"...),
		append(append([]byte{kindRaft, 3}, "cli"...), append([]byte{4}, "id-s"...)...),
		{kindRPC, 0}, // no name at all
	} {
		c := dialRawTLS(t, srv.Addr(), mallory, ca.Pool())
		if _, err := c.Write(append(preamble, frame([]byte{0x90})...)); err != nil {
			t.Fatalf("write: %v", err)
		}
		expectEOF(t, c)
		_ = c.Close()
	}
	testkit.Eventually(t, "server counts wrong names", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().WrongPeerName >= 3 }))

	// A Transport cannot be configured with a certificate naming another node.
	_, err := New(Config{BindAddr: "127.0.0.1:0", TLS: &TLS{NodeName: "cli", Certificate: mallory, CAs: ca.Pool()}})
	if err == nil || !strings.Contains(err.Error(), "TLS.NodeName") {
		t.Fatalf("New with a certificate naming another node: %v", err)
	}
}

// dialRawTLS completes a TLS handshake with addr presenting cert, without
// sending anything else.
func dialRawTLS(t *testing.T, addr string, cert tls.Certificate, roots *x509.CertPool) *tls.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: "srv", MinVersion: tls.VersionTLS13,
	})
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	return c
}

func TestTLSRequiredRefusesPlaintext(t *testing.T) {
	ca := newCA(t, "cluster CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))
	_ = newRaftTransport(t, srv)
	plain := newTestTransport(t, "id-p", echo)
	if err := plain.Call(t.Context(), srv.Addr(), "echo", 1, nil); err == nil {
		t.Fatal("plaintext Call to a TLS-required server succeeded")
	}
	c, err := plain.StreamLayer().Dial(RaftAddress(srv.Addr(), "id-s"), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	expectEOF(t, c)
	_ = c.Close()
	testkit.Eventually(t, "plaintext refusals counted", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().PlaintextRefused >= 2 }))

	// A client that requires TLS does not fall back to plaintext.
	cli := newTestTransport(t, "id-c", nil, tlsNode(t, ca, "cli", true, nil, nil))
	if err := cli.Call(t.Context(), plain.Addr(), "echo", 1, nil); err == nil {
		t.Fatal("TLS-required Call to a plaintext server succeeded")
	}
	if st := cli.Stats(); st.TLSHandshakeFailures != 1 || st.PlaintextFallbacks != 0 {
		t.Fatalf("client stats %+v, want one handshake failure and no fallback", st)
	}
}

func TestTLSOptionalAcceptsBoth(t *testing.T) {
	ca := newCA(t, "cluster CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", false, nil, nil))
	plain := newTestTransport(t, "id-p", echo)
	secure := newTestTransport(t, "id-c", echo, tlsNode(t, ca, "cli", false, nil, nil))
	_ = servedRaft(t, srv)
	np, nsec := servedRaft(t, plain), newRaftTransport(t, secure)
	for name, tr := range map[string]*Transport{"plaintext": plain, "TLS": secure} {
		var got int
		if err := tr.Call(t.Context(), srv.Addr(), "echo", 5, &got); err != nil || got != 5 {
			t.Fatalf("%s Call: %d, %v", name, got, err)
		}
	}
	for name, nt := range map[string]*raft.NetworkTransport{"plaintext": np, "TLS": nsec} {
		if err := appendEntries(nt, srv.Addr(), "id-s"); err != nil {
			t.Fatalf("%s AppendEntries: %v", name, err)
		}
	}
	// A TLS client that does not require TLS falls back to plaintext with
	// a node that does not speak it (a cluster being migrated).
	if err := secure.Call(t.Context(), plain.Addr(), "echo", 1, nil); err != nil {
		t.Fatalf("Call to a plaintext node: %v", err)
	}
	if err := appendEntries(nsec, plain.Addr(), "id-p"); err != nil {
		t.Fatalf("AppendEntries to a plaintext node: %v", err)
	}
	st := secure.Stats()
	if st.PlaintextFallbacks != 2 || st.TLSHandshakeFailures != 0 {
		t.Fatalf("client stats %+v, want one fallback", st)
	}
	if st := srv.Stats(); st.PlaintextRefused+st.TLSHandshakeFailures+st.WrongPeerName != 0 {
		t.Fatalf("server refused something: %+v", st)
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	ca := newCA(t, "cluster CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil),
		func(c *Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	// A ClientHello record header and nothing else: the server gives up.
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{tlsRecordHandshake, 3, 1}); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, c)
	testkit.Eventually(t, "timeout counted", 10*time.Second, testkit.Holds(func() bool {
		st := srv.Stats()
		return st.TLSHandshakeFailures == 1 && st.InboundConns == 0
	}))
}

func TestTLSConfigValidation(t *testing.T) {
	ca := newCA(t, "cluster CA")
	good := keyPair(t, ca, "n1")
	for _, tc := range []struct {
		name string
		tls  TLS
		want string
	}{
		{"no name", TLS{Certificate: good, CAs: ca.Pool()}, "NodeName is empty"},
		{"no certificate", TLS{NodeName: "n1", CAs: ca.Pool()}, "TLS.Certificate"},
		{"no CAs", TLS{NodeName: "n1", Certificate: good}, "TLS.CAs"},
		{"other name", TLS{NodeName: "n2", Certificate: good, CAs: ca.Pool()}, "not Config.TLS.NodeName"},
	} {
		tr, err := New(Config{BindAddr: "127.0.0.1:0", TLS: &tc.tls})
		if err == nil {
			_ = tr.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestTLSCallCancelled checks that a cancelled context aborts a TLS Call
// blocked in its handler promptly.
func TestTLSCallCancelled(t *testing.T) {
	ca := newCA(t, "cluster CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))
	cli := newTestTransport(t, "id-c", nil, tlsNode(t, ca, "cli", true, nil, nil))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- cli.Call(ctx, srv.Addr(), "block", nil, nil) }()
	testkit.Eventually(t, "call in flight", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().InboundConns == 1 }))
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Call = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled Call did not return")
	}
}
