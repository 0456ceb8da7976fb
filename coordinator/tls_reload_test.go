// TLS certificate reload: new certificate files presented without a
// restart, a broken one refused and counted.

package coordinator_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// replaceFile writes b to path by renaming a temporary file over it.
func replaceFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serialOf returns the serial of the first certificate in certPEM.
func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// TestTLSCertificateReload replaces node0's certificate files with a new
// certificate of the same CA: new handshakes present it without a restart,
// and the node keeps serving leases. Then it writes a broken certificate:
// the reload fails, is counted, and the node keeps the last good one.
func TestTLSCertificateReload(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true, Configure: func(i int, c *coordinator.Config) {
		c.TLS.ReloadInterval = 50 * time.Millisecond
		if i == 0 {
			c.Registerer = reg
		}
	}})
	cl.WaitFormed(formTimeout)
	n := cl.Node(0)
	probePEM, probeKey, err := cl.CA.NodeCert("probe")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := tls.X509KeyPair(probePEM, probeKey)
	if err != nil {
		t.Fatal(err)
	}
	presented := func() string {
		c := dialTLS(t, n.C().RPCAddr(), probe, cl.CA.Pool(), nil)
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	old := presented()

	certPEM, keyPEM, err := cl.CA.NodeCert(n.Name)
	if err != nil {
		t.Fatal(err)
	}
	want := serialOf(t, certPEM)
	replaceFile(t, n.Config.TLS.KeyFile, keyPEM)
	replaceFile(t, n.Config.TLS.CertFile, certPEM)
	cl.WaitFor("the new certificate presented", formTimeout, func() error {
		if got := presented(); got != want {
			return fmt.Errorf("%w: serial %s (old %s), want %s", holdfasttest.ErrNotYet, got, old, want)
		}
		return nil
	})
	if v := metricValue(t, reg, "holdfast_tls_reloads_total", map[string]string{"result": "ok"}); v < 1 {
		t.Errorf("reloads ok = %v, want at least 1", v)
	}
	acquireOnce(t, cl, n, "after-reload")

	replaceFile(t, n.Config.TLS.CertFile, []byte("not a certificate\n"))
	cl.WaitFor("the failed reload counted", formTimeout, func() error {
		if metricValue(t, reg, "holdfast_tls_reloads_total", map[string]string{"result": "error"}) < 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if got := presented(); got != want {
		t.Errorf("after a broken certificate file, the node presents serial %s, want the last good one %s", got, want)
	}
}
