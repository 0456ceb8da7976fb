package coordinator_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// TestForgedApplyRefused, a raft.apply forged by a connection without a
// certificate of the cluster's CA, with the certificates it presents and
// the RPC frames it writes by hand.

// selfSigned returns a self-signed certificate naming name, valid for
// server and client auth: what an attacker can make without any CA.
func selfSigned(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// caCert returns a certificate for name signed by ca.
func caCert(t *testing.T, ca *certs.CA, name string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.NodeCert(name)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// forgedApply is the raft.apply request body (coordinator's applyRequest).
type forgedApply struct {
	Data []byte `msgpack:"data"`
}

// wireRequest and wireResponse are transport's RPC frames.
type wireRequest struct {
	ID      uint64 `msgpack:"i"`
	Method  string `msgpack:"m"`
	Timeout int64  `msgpack:"t,omitempty"`
	Body    []byte `msgpack:"b"`
}

type wireResponse struct {
	ID    uint64 `msgpack:"i"`
	Code  string `msgpack:"c,omitempty"`
	Error string `msgpack:"e,omitempty"`
}

// forgeApply writes, on a new connection to addr, a raft.apply creating
// session for "mallory": in plaintext when cert is nil, else over TLS
// presenting cert whatever the server asks for (a real client would not
// even offer a certificate the server's CA list does not cover). It
// returns nil when the node answered the request with success.
func forgeApply(t *testing.T, addr string, cert *tls.Certificate, session string) error {
	t.Helper()
	data, err := fsm.Encode(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{
		ID: session, Node: "mallory", NodeID: "mallory-id", TTLNanos: int64(time.Hour), Addr: "127.0.0.1:1", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := transport.Encode(forgedApply{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	frame, err := transport.Encode(wireRequest{ID: 1, Method: "raft.apply", Timeout: int64(10 * time.Second), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(formTimeout))
	conn, out := raw, []byte{'P'}
	if cert != nil {
		tc := tls.Client(raw, &tls.Config{
			MinVersion:         tls.VersionTLS13,
			InsecureSkipVerify: true, // the forger does not care who the server is
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return cert, nil
			},
		})
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		conn, out = tc, append(out, byte(len("mallory")))
		out = append(out, "mallory"...)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(frame)))
	out = append(out, frame...)
	if _, err := conn.Write(out); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(conn, resp); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	var r wireResponse
	if err := transport.Decode(resp, &r); err != nil {
		return err
	}
	if r.Code != "" {
		return fmt.Errorf("answered %s: %s", r.Code, r.Error)
	}
	return nil
}

// TestForgedApplyRefused sends the leader a raft.apply that would create a
// session for "mallory", from a connection without a certificate, with a
// self-signed certificate and with a certificate of another CA: each is
// refused and no node's replica changes. The same request over a
// connection with a certificate of the cluster's CA is applied, which
// shows the check would see the change.
func TestForgedApplyRefused(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true})
	leader := cl.WaitFormed(formTimeout)
	other, err := certs.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	self, foreign := selfSigned(t, "mallory"), caCert(t, other, "mallory")
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"no certificate", nil},
		{"self-signed", &self},
		{"another CA", &foreign},
	} {
		session := "forged-" + tc.name
		st := leader.C().TransportStats()
		before := st.PlaintextRefused + st.TLSHandshakeFailures
		if err := forgeApply(t, leader.C().RPCAddr(), tc.cert, session); err == nil {
			t.Fatalf("%s: raft.apply accepted", tc.name)
		} else {
			t.Logf("%s: refused: %v", tc.name, err)
		}
		cl.WaitFor(tc.name+": the leader counts the refusal", formTimeout, func() error {
			st := leader.C().TransportStats()
			if st.PlaintextRefused+st.TLSHandshakeFailures == before {
				return fmt.Errorf("%w: not counted", holdfasttest.ErrNotYet)
			}
			return nil
		})
		// A barrier through a genuine lease: once every node sees it, the
		// forged command, had it been accepted, would have been applied.
		acquireOnce(t, cl, follower(cl, leader), "barrier-"+tc.name)
		for _, n := range cl.Running() {
			if n.C().HasSession(session) {
				t.Fatalf("%s: %s's replica has the forged session", tc.name, n.Name)
			}
		}
	}
	// Control: a certificate of the cluster's CA is trusted like a node's.
	// Sent to the leader of the moment: only a leader applies, and a loaded
	// machine can move the leadership during the loop above.
	genuine := caCert(t, cl.CA, "mallory")
	cl.WaitFor("control: raft.apply with a certificate of the cluster's CA applied", formTimeout, func() error {
		return forgeApply(t, cl.WaitLeader(formTimeout).C().RPCAddr(), &genuine, "control")
	})
	cl.WaitFor("the control session applied everywhere", formTimeout, func() error {
		for _, n := range cl.Running() {
			if !n.C().HasSession("control") {
				return fmt.Errorf("%w: %s lacks it", holdfasttest.ErrNotYet, n.Name)
			}
		}
		return nil
	})
}
