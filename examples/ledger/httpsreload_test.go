package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/holdfast-go/holdfast/certs"
)

// TestHTTPSCertificateReload replaces the -http certificate files: the
// next handshake uses the new certificate; a broken file leaves it.
func TestHTTPSCertificateReload(t *testing.T) {
	ca, err := certs.NewCA("ledger test CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := ca.WriteFiles(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := secOptions{ca: f.CAFile, cert: f.CertFile, key: f.KeyFile, httpTLS: true}.serverTLS()
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		c, err := cfg.GetConfigForClient(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.SerialNumber.String()
	}
	first := serial()
	if _, err := ca.WriteFiles(dir, "n1"); err != nil { // a renewed certificate
		t.Fatal(err)
	}
	renewed := serial()
	if renewed == first {
		t.Fatalf("after the files were replaced the handshake still uses serial %s", first)
	}
	if err := os.WriteFile(f.CertFile, []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed {
		t.Errorf("after a broken certificate file: serial %s, want the last good one %s", got, renewed)
	}
}
