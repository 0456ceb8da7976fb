//go:build linux

package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCtl runs holdfastctl and returns its exit status and output.
func runCtl(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("holdfastctl %v: %v", args, err)
	return 0, ""
}

// TestSecureLedger brings up three ledger processes from the certificates
// and gossip key that `holdfastctl cert` makes (the three commands of the
// package doc), and reads their admin endpoints over HTTPS with
// holdfastctl's client certificate.
func TestSecureLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs three processes")
	}
	ctl := buildHoldfastctl(t)
	dir := filepath.Join(t.TempDir(), "certs")
	makeSecureCerts(t, ctl, dir)
	client := secureClient(t, dir)
	lc := startSecureCluster(t, dir, client)
	checkSecureLogs(t, lc)
	checkCtlOverTLS(t, ctl, dir, lc.observer.http)
	// A graceful stop still works.
	n3 := lc.procs["n3"]
	n3.signal(t, syscall.SIGTERM)
	select {
	case <-n3.exited:
		if n3.waitErr != nil {
			t.Fatalf("n3 after SIGTERM: %v", n3.waitErr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("n3 did not exit within 60s of SIGTERM")
	}
}

// makeSecureCerts makes, with holdfastctl ctl, a CA, the certificates of
// n1, n2 and n3, and a client certificate in dir.
func makeSecureCerts(t *testing.T, ctl, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"cert", "create-ca", "-dir", dir},
		{"cert", "create-node", "-dir", dir, "-addr", "127.0.0.1", "n1"},
		{"cert", "create-node", "-dir", dir, "-addr", "127.0.0.1", "n2"},
		{"cert", "create-node", "-dir", dir, "-addr", "127.0.0.1", "n3"},
		{"cert", "create-client", "-dir", dir},
	} {
		if code, out := runCtl(t, ctl, args...); code != 0 {
			t.Fatalf("holdfastctl %v: exit %d\n%s", args, code, out)
		}
	}
}

// secureClient returns an HTTPS client that trusts dir's CA and presents
// dir's client certificate.
func secureClient(t *testing.T, dir string) *http.Client {
	t.Helper()
	f := func(name string) string { return filepath.Join(dir, name) }
	caPEM, err := os.ReadFile(f("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.LoadX509KeyPair(f("client.pem"), f("client-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
}

// startSecureCluster starts n1, n2 and n3 with -certs dir, read over
// HTTPS with client, and waits until the table is steady.
func startSecureCluster(t *testing.T, dir string, client *http.Client) *ledgerCluster {
	t.Helper()
	lc := newLedgerCluster(t, func(string) ([]string, *http.Client) { return []string{"-certs", dir}, client })
	voter := func(name string) []string { return []string{"-data", filepath.Join(lc.dir, name), "-expect", "3"} }
	lc.observer = lc.start(t, "n1", voter("n1")...)
	join := lc.observer.waitListening(t, 30*time.Second).kv["gossip"]
	lc.start(t, "n2", append(voter("n2"), "-join", join)...)
	lc.start(t, "n3", append(voter("n3"), "-join", join)...)
	for _, name := range []string{"n1", "n2", "n3"} {
		lc.procs[name].waitReady(t, 30*time.Second)
	}
	lc.waitSteady(t, "n1", "n2", "n3")
	return lc
}

// checkSecureLogs checks that every node ran with mutual TLS, required,
// and encrypted gossip.
func checkSecureLogs(t *testing.T, lc *ledgerCluster) {
	t.Helper()
	for name, p := range lc.procs {
		b, err := os.ReadFile(p.errLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"tls=true", "gossip_encrypted=true", "msg=\"gossip encrypted\""} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s's log lacks %s", name, want)
			}
		}
	}
}

// checkCtlOverTLS checks that holdfastctl ctl reads the admin endpoint at
// addr with the client certificate of dir and is refused without one, and
// that the endpoint does not answer plain HTTP.
func checkCtlOverTLS(t *testing.T, ctl, dir, addr string) {
	t.Helper()
	f := func(name string) string { return filepath.Join(dir, name) }
	tlsArgs := []string{"-addr", addr, "-ca", f("ca.pem"), "-cert", f("client.pem"), "-key", f("client-key.pem")}
	code, out := runCtl(t, ctl, append(tlsArgs, "status")...)
	if code != 0 || !strings.Contains(out, "n1, n2, n3") {
		t.Fatalf("holdfastctl status over TLS: exit %d\n%s", code, out)
	}
	if code, out := runCtl(t, ctl, "-addr", addr, "-ca", f("ca.pem"), "status"); code != 1 {
		t.Fatalf("holdfastctl without a client certificate: exit %d, want 1\n%s", code, out)
	}
	if resp, err := httpClient.Get("http://" + addr + "/v1/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the admin endpoint answered plain HTTP")
		}
	}
}

// TestLedgerRefusesPlaintext starts the ledger without certificates: it
// refuses, naming the commands that make them and -insecure; with
// -insecure it starts (and stops on SIGTERM).
func TestLedgerRefusesPlaintext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a process")
	}
	bin := buildLedger(t)
	db := filepath.Join(t.TempDir(), "ledger.db")
	out, err := exec.Command(bin, "-node", "n1", "-db", db, "-ttl", "10s").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("without certificates: %v, want exit status 2\n%s", err, out)
	}
	for _, want := range []string{"no certificates", "holdfastctl cert create-ca", "holdfastctl cert create-node", "-certs", "-insecure"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	p := startProc(t, bin, "n1", "-db", db, "-insecure", "-data", filepath.Join(t.TempDir(), "n1"), "-expect", "1", "-ttl", "2s")
	p.waitReady(t, 30*time.Second)
	p.signal(t, syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("after SIGTERM: %v", p.waitErr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no exit within 60s of SIGTERM")
	}
}
