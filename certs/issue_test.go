package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
)

func TestIssueAndLoadCA(t *testing.T) {
	ca, err := certs.NewCAValid("cluster CA", 2*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := certs.LoadCA(ca.CertPEM(), keyPEM)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	// A certificate issued by the loaded CA verifies against the original.
	certPEM, nodeKey, err := loaded.Issue(certs.Request{Name: "n1", DNSNames: []string{"n1.example"},
		IPs: []net.IP{net.ParseIP("10.0.0.1")}, Validity: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, nodeKey); err != nil {
		t.Fatal(err)
	}
	leaf := parseCert(t, certPEM)
	if !slices.Equal(leaf.DNSNames, []string{"n1", "n1.example"}) || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Fatalf("SANs: DNS %q, IP %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d > 50*time.Hour {
		t.Fatalf("validity %v, want about 48h", d)
	}
	for _, host := range []string{"n1", "n1.example", "10.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	// A client certificate names nothing and cannot serve.
	clientPEM, _, err := loaded.Issue(certs.Request{Name: "holdfastctl", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	client := parseCert(t, clientPEM)
	if len(client.DNSNames)+len(client.IPAddresses) != 0 {
		t.Fatalf("client certificate has SANs %q %v", client.DNSNames, client.IPAddresses)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := client.Verify(opts); err != nil {
		t.Fatalf("client auth: %v", err)
	}
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if _, err := client.Verify(opts); err == nil {
		t.Fatal("a client certificate is valid for server auth")
	}
	// A node certificate is not a CA.
	if _, err := certs.LoadCA(certPEM, nodeKey); err == nil {
		t.Fatal("LoadCA accepted a node certificate")
	}
	if _, _, err := ca.Issue(certs.Request{Name: "c", Client: true, DNSNames: []string{"x"}}); err == nil {
		t.Fatal("Issue accepted a client certificate with SANs")
	}
}
