package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 5*time.Second)
}

// fakeTarget records the certificate installed on it.
type fakeTarget struct {
	mu       sync.Mutex
	serial   string
	installs int
}

func (f *fakeTarget) SetTLSCertificate(cert tls.Certificate, _ *x509.CertPool) error {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serial, f.installs = leaf.SerialNumber.String(), f.installs+1
	return nil
}

func (f *fakeTarget) state() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serial, f.installs
}

// serialOf returns the serial of the first certificate in certPEM.
func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	blk, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// replace writes b over path by renaming a temporary file, as an operator
// deploying a certificate would.
func replace(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// setup writes node n's files of a new CA into a temporary dir and returns
// the CA, the source and a Reloader over it with its metrics.
func setup(t *testing.T, interval time.Duration) (*certs.CA, Source, *Reloader, *Metrics) {
	t.Helper()
	ca, err := certs.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "n")
	if err != nil {
		t.Fatal(err)
	}
	src := Source{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, RequireTLS: true}
	m := new(Metrics)
	r, mat, err := New(Options{Source: src, NodeName: "n", Interval: interval, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(files.CertFile)
	if got := mat.Cert.Leaf; got != nil && got.SerialNumber.String() != serialOf(t, cur) {
		t.Fatalf("New loaded serial %s, want the file's", got.SerialNumber)
	}
	return ca, src, r, m
}

// TestReloadPicksUpChange: unchanged files install nothing; a new
// certificate and key of the same CA are installed once, and counted.
func TestReloadPicksUpChange(t *testing.T) {
	ca, src, r, m := setup(t, 0)
	target := &fakeTarget{}
	if changed, err := r.Check(target); changed || err != nil {
		t.Fatalf("unchanged files: Check = %v, %v", changed, err)
	}
	certPEM, keyPEM, err := ca.NodeCert("n")
	if err != nil {
		t.Fatal(err)
	}
	replace(t, src.KeyFile, keyPEM)
	replace(t, src.CertFile, certPEM)
	if changed, err := r.Check(target); !changed || err != nil {
		t.Fatalf("new certificate: Check = %v, %v", changed, err)
	}
	if serial, n := target.state(); serial != serialOf(t, certPEM) || n != 1 {
		t.Fatalf("installed serial %s (%d installs), want %s once", serial, n, serialOf(t, certPEM))
	}
	if changed, _ := r.Check(target); changed {
		t.Error("the same files were taken for a change again")
	}
	if ok, failed := m.Reloads(); ok != 1 || failed != 0 {
		t.Errorf("reloads ok=%d error=%d, want 1, 0", ok, failed)
	}
}

// TestReloadBrokenKeepsOld: a broken certificate file, a key that does not
// match, a certificate of another CA, one naming another node: each is
// refused and counted, the target keeps the last good certificate; fixing
// the files installs the fix.
func TestReloadBrokenKeepsOld(t *testing.T) {
	ca, src, r, m := setup(t, 0)
	target := &fakeTarget{}
	goodCert, goodKey, _ := ca.NodeCert("n")
	replace(t, src.CertFile, goodCert)
	replace(t, src.KeyFile, goodKey)
	if _, err := r.Check(target); err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	foreignCert, foreignKey, _ := other.NodeCert("n")
	wrongCert, wrongKey, _ := ca.NodeCert("m")
	_, strayKey, _ := ca.NodeCert("n")
	for i, tc := range []struct {
		name, field, detail string
		cert, key           []byte
	}{
		{"not PEM", "TLS.CertFile", "no PEM certificate", []byte("not a certificate\n"), goodKey},
		{"key of another certificate", "TLS.KeyFile", "does not match", goodCert, strayKey},
		{"another CA", "TLS.CertFile", "mismatched CA", foreignCert, foreignKey},
		{"another node", "TLS.CertFile", "must name the node", wrongCert, wrongKey},
	} {
		replace(t, src.CertFile, tc.cert)
		replace(t, src.KeyFile, tc.key)
		changed, err := r.Check(target)
		var fe *FieldError
		if !changed || !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.detail) {
			t.Fatalf("%s: Check = %v, %v; want a refused change naming %s (%q)", tc.name, changed, err, tc.field, tc.detail)
		}
		if serial, n := target.state(); serial != serialOf(t, goodCert) || n != 1 {
			t.Fatalf("%s: the target has serial %s after %d installs; want the last good %s", tc.name, serial, n, serialOf(t, goodCert))
		}
		if ok, failed := m.Reloads(); ok != 1 || failed != uint64(i+1) {
			t.Fatalf("%s: reloads ok=%d error=%d, want 1, %d", tc.name, ok, failed, i+1)
		}
	}
	fixCert, fixKey, _ := ca.NodeCert("n")
	replace(t, src.CertFile, fixCert)
	replace(t, src.KeyFile, fixKey)
	if _, err := r.Check(target); err != nil {
		t.Fatalf("fixed files: %v", err)
	}
	if serial, _ := target.state(); serial != serialOf(t, fixCert) {
		t.Errorf("after the fix the target has serial %s, want %s", serial, serialOf(t, fixCert))
	}
}

// TestReloadLoop: Start follows the files on its own and Stop joins it
// (the leak check of TestMain fails a loop left running).
func TestReloadLoop(t *testing.T) {
	ca, src, r, m := setup(t, time.Millisecond)
	target := &fakeTarget{}
	r.Start(target)
	defer r.Stop()
	certPEM, keyPEM, _ := ca.NodeCert("n")
	replace(t, src.KeyFile, keyPEM)
	replace(t, src.CertFile, certPEM)
	want := serialOf(t, certPEM)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if serial, _ := target.state(); serial == want {
			break
		}
		if time.Now().After(deadline) {
			ok, failed := m.Reloads()
			t.Fatalf("the loop did not install the new certificate (reloads ok=%d error=%d)", ok, failed)
		}
		time.Sleep(time.Millisecond)
	}
	r.Stop()
	r.Stop() // idempotent
}

// TestReloadOff: no loop without files or with a negative interval; a
// zero interval is the default.
func TestReloadOff(t *testing.T) {
	_, _, r0, _ := setup(t, 0)
	if r0.o.Interval != DefaultInterval {
		t.Errorf("interval 0 became %v, want DefaultInterval", r0.o.Interval)
	}
	_, src, r, _ := setup(t, -1)
	r.Start(&fakeTarget{})
	if r.stop != nil {
		t.Error("a loop started with a negative interval")
	}
	r.Stop()
	pemOnly := Source{}
	for i, f := range []string{src.CAFile, src.CertFile, src.KeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		*[]*[]byte{&pemOnly.CAPEM, &pemOnly.CertPEM, &pemOnly.KeyPEM}[i] = b
	}
	pemOnly.CertFile = filepath.Join(t.TempDir(), "ignored.pem") // the PEM bytes win
	if pemOnly.Watches() {
		t.Error("material given as PEM bytes is watched")
	}
	r2, _, err := New(Options{Source: pemOnly, NodeName: "n", Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r2.Start(&fakeTarget{})
	if r2.stop != nil {
		t.Error("a loop started with nothing to watch")
	}
}
