package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
)

// TestTLSAndPortHints: the errors of missing TLS flags and of a wrong port
// say what to pass (they used to be the HTTP client's words: "answered
// 400 ... Client sent an HTTP request to an HTTPS server", "tls:
// certificate required", "EOF").
func TestTLSAndPortHints(t *testing.T) {
	hostPort, dir, cl := tlsAdmin(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	c := cl.Node(0).C()
	plain := httptest.NewServer(admin.Handler(c))
	defer plain.Close()
	plainAddr := strings.TrimPrefix(plain.URL, "http://")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no TLS flags", []string{"-addr", hostPort},
			"holdfastctl: " + hostPort + " serves HTTPS with client certificates: give -ca, -cert and -key (holdfastctl cert create-client " +
				"writes client.pem and client-key.pem beside cert create-ca's ca.pem), or -certs DIR with those files\n"},
		{"only -ca", []string{"-addr", hostPort, "-ca", p("ca.pem")},
			"holdfastctl: cannot reach " + hostPort + ": tls: certificate required: the node requires a client certificate: " +
				"give -cert and -key (holdfastctl cert create-client), or -certs DIR\n"},
		{"no -ca", []string{"-addr", hostPort, "-cert", p("client.pem"), "-key", p("client-key.pem")},
			"the node's certificate is not signed by a CA holdfastctl trusts: give -ca with the cluster's ca.pem (or -certs DIR)\n"},
		{"the RPC port", []string{"-addr", c.RPCAddr()},
			": " + c.RPCAddr() + " answered, but not as an admin endpoint: is it the node's raft/RPC or gossip port? " +
				"Give the HTTP address (the ledger prints it as http= on its listening line)\n"},
		{"TLS flags at a plain HTTP node", []string{"-addr", plainAddr, "-certs", dir},
			": " + plainAddr + " serves plain HTTP: give -addr http://" + plainAddr + ", without the TLS flags\n"},
		{"-certs without the client files", []string{"-addr", hostPort, "-certs", t.TempDir()}, "no ca.pem there"},
	} {
		code, _, errOut := ctl(append(tc.args, "status")...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q;\nwant it to contain %q", tc.name, code, errOut, tc.want)
		}
	}
	if out := mustCtl(t, "-addr", hostPort, "-certs", dir, "status"); !strings.Contains(out, "node0") {
		t.Errorf("status with -certs:\n%s", out)
	}
}

// TestDefaultCertDir: with the client files in ~/.holdfast/certs (where
// the cert commands write by default), holdfastctl reads an HTTPS node
// without any TLS flag, and still reads a plain-HTTP node over HTTP.
func TestDefaultCertDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, sub := range []string{"create-ca", "create-client"} {
		mustCtl(t, "cert", sub)
	}
	dir := filepath.Join(home, ".holdfast", "certs")
	for _, f := range []string{"ca.pem", "ca-key.pem", "gossip.key", "client.pem", "client-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("cert commands without -dir: %v", err)
		}
	}
	mustCtl(t, "cert", "create-node", "-addr", "127.0.0.1", "node0")
	hostPort, _, cl := tlsAdminIn(t, dir)
	if out := mustCtl(t, "-addr", hostPort, "status"); !strings.Contains(out, "node0") {
		t.Errorf("status with the default directory's files:\n%s", out)
	}
	plain := httptest.NewServer(admin.Handler(cl.Node(0).C()))
	defer plain.Close()
	if out := mustCtl(t, "-addr", strings.TrimPrefix(plain.URL, "http://"), "status"); !strings.Contains(out, "node0") {
		t.Errorf("status of a plain-HTTP node with the default directory's files:\n%s", out)
	}
}
