package transport

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// TestSetTLSCertificate swaps a server's certificate: the next handshake
// presents the new one and a call still succeeds; a certificate naming
// another node, or a transport without TLS, is refused and changes nothing.
func TestSetTLSCertificate(t *testing.T) {
	ca := newCA(t, "cluster CA")
	a := newTestTransport(t, "id-a", echo, tlsNode(t, ca, "alpha", true, nil, nil))
	b := newTestTransport(t, "id-b", echo, tlsNode(t, ca, "beta", true, nil, nil))
	probe := keyPair(t, ca, "probe")
	serial := func() string {
		c, err := tls.Dial("tcp", b.Addr(), &tls.Config{Certificates: []tls.Certificate{probe}, MinVersion: tls.VersionTLS13,
			InsecureSkipVerify: true}) // the serial is what is checked
		if err != nil {
			t.Fatalf("TLS dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	next := keyPair(t, ca, "beta")
	if err := b.SetTLSCertificate(next, ca.Pool()); err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(next.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != leaf.SerialNumber.String() || got == before {
		t.Errorf("after SetTLSCertificate the server presents serial %s, want %s (was %s)", got, leaf.SerialNumber, before)
	}
	var got string
	if err := a.Call(t.Context(), b.Addr(), "echo", "after the swap", &got); err != nil || got != "after the swap" {
		t.Errorf("Call after the swap: %q, %v", got, err)
	}
	if err := b.SetTLSCertificate(keyPair(t, ca, "gamma"), ca.Pool()); err == nil {
		t.Error("a certificate naming another node was accepted")
	}
	if got := serial(); got != leaf.SerialNumber.String() {
		t.Errorf("a refused certificate changed the presented one: %s", got)
	}
	plain := newTestTransport(t, "id-c", echo)
	if err := plain.SetTLSCertificate(next, ca.Pool()); err == nil {
		t.Error("SetTLSCertificate on a transport without TLS succeeded")
	}
}
