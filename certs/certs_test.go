package certs_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
)

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("not one PEM certificate: %q", b)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNodeCert(t *testing.T) {
	ca := newCA(t, "test CA")
	caCert := parseCert(t, ca.CertPEM())
	if !caCert.IsCA || caCert.Subject.CommonName != "test CA" {
		t.Fatalf("CA certificate: IsCA %v, CN %q", caCert.IsCA, caCert.Subject.CommonName)
	}
	certPEM, keyPEM, err := ca.NodeCert("node1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatalf("certificate and key do not pair: %v", err)
	}
	leaf := parseCert(t, certPEM)
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "node1" {
		t.Fatalf("DNS SANs = %q, want [node1]", leaf.DNSNames)
	}
	if d := time.Until(leaf.NotAfter); d < 24*time.Hour {
		t.Fatalf("certificate valid for only %v more", d)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "node1", KeyUsages: []x509.ExtKeyUsage{usage}})
		if err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: newCA(t, "other CA").Pool()}); err == nil {
		t.Error("certificate verified against another CA")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "node2"}); err == nil {
		t.Error("certificate verified for another node name")
	}
}

func TestNodeCertErrors(t *testing.T) {
	ca := newCA(t, "test CA")
	if _, _, err := ca.NodeCert(""); err == nil {
		t.Error("NodeCert accepted an empty name")
	}
	if _, _, err := ca.NodeCert("nöde"); err == nil {
		t.Error("NodeCert accepted a non-ASCII name")
	}
	if _, err := certs.NewCA(""); err == nil {
		t.Error("NewCA accepted an empty name")
	}
	if _, err := ca.WriteFiles(t.TempDir(), "../escape"); err == nil {
		t.Error("WriteFiles accepted a path as node name")
	}
}

// TestMutualTLS runs a TLS handshake between two node certificates, each
// side requiring and verifying the other's.
func TestMutualTLS(t *testing.T) {
	ca := newCA(t, "test CA")
	pair := func(name string) tls.Certificate {
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
	a, b := net.Pipe()
	server := tls.Server(a, &tls.Config{
		Certificates: []tls.Certificate{pair("srv")},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
		MinVersion:   tls.VersionTLS13,
	})
	client := tls.Client(b, &tls.Config{
		Certificates: []tls.Certificate{pair("cli")},
		RootCAs:      ca.Pool(),
		ServerName:   "srv",
		MinVersion:   tls.VersionTLS13,
	})
	defer a.Close() // not server.Close: its close_notify would block on the pipe
	defer b.Close()
	errc := make(chan error, 1)
	go func() { errc <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if got := server.ConnectionState().PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != "cli" {
		t.Fatalf("server saw client names %q", got)
	}
}

func TestWriteFiles(t *testing.T) {
	ca := newCA(t, "test CA")
	dir := t.TempDir()
	for range 2 { // the second call replaces the files
		f, err := ca.WriteFiles(dir, "node7")
		if err != nil {
			t.Fatal(err)
		}
		if f.CAFile != filepath.Join(dir, "ca.pem") || f.CertFile != filepath.Join(dir, "node7.pem") || f.KeyFile != filepath.Join(dir, "node7-key.pem") {
			t.Fatalf("paths %+v", f)
		}
		caPEM, err := os.ReadFile(f.CAFile)
		if err != nil || !bytes.Equal(caPEM, ca.CertPEM()) {
			t.Fatalf("CA file: %v", err)
		}
		if _, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile); err != nil {
			t.Fatalf("LoadX509KeyPair: %v", err)
		}
		st, err := os.Stat(f.KeyFile)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file mode %v, %v; want 0600", st.Mode().Perm(), err)
		}
	}
}
