package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestCertCommands makes a CA, a node certificate and a client certificate
// with the cert commands, checks the files, their modes and that nothing
// is overwritten without -force.
func TestCertCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out := mustCtl(t, "cert", "create-ca", "-dir", dir)
	for _, f := range []string{"ca.pem", "ca-key.pem", "gossip.key"} {
		if !strings.Contains(out, filepath.Join(dir, f)) {
			t.Errorf("create-ca output does not name %s:\n%s", f, out)
		}
	}
	mustCtl(t, "cert", "create-node", "-dir", dir, "n1", "-addr", "127.0.0.1,n1.example")
	mustCtl(t, "cert", "create-client", "-dir", dir)
	modes := map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600, "gossip.key": 0o600,
		"n1.pem": 0o644, "n1-key.pem": 0o600, "client.pem": 0o644, "client-key.pem": 0o600}
	for name, want := range modes {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		// The umask may only clear bits; keys must never be readable by others.
		if got := st.Mode().Perm(); got&^want != 0 || (want == 0o600 && got != 0o600) {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
	if _, err := certs.ReadGossipKeyFile(filepath.Join(dir, "gossip.key")); err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, host := range []string{"n1", "n1.example", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("node certificate for %s: %v", host, err)
		}
	}

	// Nothing is replaced without -force, and a refused command writes nothing.
	before, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	for _, args := range [][]string{
		{"cert", "create-ca", "-dir", dir},
		{"cert", "create-node", "-dir", dir, "n1"},
		{"cert", "create-client", "-dir", dir},
	} {
		code, _, errOut := ctl(args...)
		if code != 1 || !strings.Contains(errOut, "exists") || !strings.Contains(errOut, "-force") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and a refusal naming -force", args, code, errOut)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem")); string(after) != string(before) {
		t.Fatal("the CA key was replaced without -force")
	}
	mustCtl(t, "cert", "create-node", "-dir", dir, "-force", "n1")

	for _, args := range [][]string{
		{"cert"}, {"cert", "bogus"}, {"cert", "create-node", "-dir", dir}, {"cert", "create-ca", "-addr", "x"},
	} {
		if code, _, _ := ctl(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := ctl("cert", "create-node", "-dir", t.TempDir(), "n2"); code != 1 || !strings.Contains(errOut, "create-ca") {
		t.Errorf("create-node without a CA: exit %d, stderr %q", code, errOut)
	}
}

// tlsAdmin serves node0's admin handler (with actions for client
// certificates) over HTTPS requiring a client certificate of a CA made by
// the cert commands in a new directory; it returns the server's
// HOST:PORT, that directory and the cluster.
func tlsAdmin(t *testing.T) (hostPort, dir string, cl *holdfasttest.Cluster) {
	dir = t.TempDir()
	mustCtl(t, "cert", "create-ca", "-dir", dir)
	mustCtl(t, "cert", "create-node", "-dir", dir, "node0", "-addr", "127.0.0.1")
	mustCtl(t, "cert", "create-client", "-dir", dir)
	return tlsAdminIn(t, dir)
}

// tlsAdminIn is tlsAdmin with the files already in dir.
func tlsAdminIn(t *testing.T, dir string) (hostPort, _ string, cl *holdfasttest.Cluster) {
	p := func(name string) string { return filepath.Join(dir, name) }
	cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(settle)
	srv := httptest.NewUnstartedServer(admin.New(cl.Node(0).C(), admin.Options{Authorize: admin.RequireClientCertificate}))
	pair, err := tls.LoadX509KeyPair(p("node0.pem"), p("node0-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(p("ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), dir, cl
}

// TestTLSAdmin reads an admin handler served over HTTPS that requires a
// client certificate of the cluster's CA.
func TestTLSAdmin(t *testing.T) {
	hostPort, dir, _ := tlsAdmin(t)
	p := func(name string) string { return filepath.Join(dir, name) }

	out := mustCtl(t, "-addr", hostPort, "-ca", p("ca.pem"), "-cert", p("client.pem"), "-key", p("client-key.pem"), "status")
	if !strings.Contains(out, "node0") {
		t.Fatalf("status over TLS:\n%s", out)
	}
	mustCtl(t, "-addr", "https://"+hostPort, "-ca", p("ca.pem"), "-cert", p("client.pem"), "-key", p("client-key.pem"), "-server-name", "node0", "shards")
	// An action over HTTPS with the client certificate is authorised: the
	// node itself refuses it (the last voter cannot leave).
	code, _, errOut := ctl("-addr", hostPort, "-ca", p("ca.pem"), "-cert", p("client.pem"), "-key", p("client-key.pem"), "leave", "-confirm", "node0")
	if code != 1 || !strings.Contains(errOut, "409 Conflict to POST /v1/leave") || !strings.Contains(errOut, "last voter") {
		t.Errorf("leave of the only voter over TLS: exit %d, stderr %q; want 1 and the node's refusal", code, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no client certificate", []string{"-ca", p("ca.pem")}, 1},
		{"no CA", []string{"-cert", p("client.pem"), "-key", p("client-key.pem")}, 1},
		{"cert without key", []string{"-ca", p("ca.pem"), "-cert", p("client.pem")}, 2},
		{"plain http URL", []string{"-ca", p("ca.pem"), "-addr", "http://" + hostPort}, 2},
	} {
		args := append([]string{"-addr", hostPort}, tc.args...)
		if code, _, errOut := ctl(append(args, "status")...); code != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", tc.name, code, tc.code, errOut)
		}
	}
}
