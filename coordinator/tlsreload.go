package coordinator

import (
	"bytes"
	"crypto/x509"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTLSReloadInterval is how often the TLS files are checked for
// changes when TLSConfig.ReloadInterval is zero.
const DefaultTLSReloadInterval = 10 * time.Second

// tlsReloader follows the TLS files (TLSConfig.CAFile, CertFile, KeyFile)
// and installs a changed certificate for the handshakes that follow.
type tlsReloader struct {
	last     [3][]byte // the files' contents last loaded or tried
	ok, fail atomic.Uint64
}

// readTLSFiles returns the contents of the TLS files in use (nil for a
// field given as PEM bytes, not set, or unreadable).
func (t *TLSConfig) readTLSFiles() [3][]byte {
	var out [3][]byte
	for i, f := range []struct {
		pem  []byte
		file string
	}{{t.CAPEM, t.CAFile}, {t.CertPEM, t.CertFile}, {t.KeyPEM, t.KeyFile}} {
		if len(f.pem) == 0 && f.file != "" {
			out[i], _ = os.ReadFile(f.file)
		}
	}
	return out
}

// watchesFiles reports whether any TLS material comes from a file.
func (t *TLSConfig) watchesFiles() bool {
	return (len(t.CAPEM) == 0 && t.CAFile != "") || (len(t.CertPEM) == 0 && t.CertFile != "") ||
		(len(t.KeyPEM) == 0 && t.KeyFile != "")
}

// tlsReloadLoop checks the TLS files every ReloadInterval. When they
// changed, it loads and checks them as New does and, if they pass, has the
// transport present the new certificate (and verify against the new CAs)
// from the next handshake on. A change that fails the checks (a half-written
// file, a key that does not match, a certificate of another CA) is logged
// and counted, and the current certificate stays; it is tried again when
// the files change again.
func (c *Coordinator) tlsReloadLoop() {
	t := c.cfg.TLS
	interval := t.ReloadInterval
	if interval == 0 {
		interval = DefaultTLSReloadInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	r := &c.tlsReload
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		files := t.readTLSFiles()
		if sameFiles(files, r.last) {
			continue
		}
		r.last = files
		m, err := t.load(c.cfg.NodeName)
		if err == nil {
			err = c.trans.SetTLSCertificate(m.cert, m.cas)
		}
		if err != nil {
			r.fail.Add(1)
			c.log.Error("TLS files changed but cannot be used; keeping the current certificate", "error", err)
			continue
		}
		r.ok.Add(1)
		leaf, _ := x509.ParseCertificate(m.cert.Certificate[0])
		if leaf != nil {
			c.log.Info("TLS certificate reloaded", "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter.UTC())
		}
	}
}

func sameFiles(a, b [3][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

var tlsReloadDesc = prometheus.NewDesc("holdfast_tls_reloads_total",
	"Changes of the TLS files: result=ok when the new certificate was installed, error when it could not be used (the old one stays).",
	[]string{"result"}, nil)

// tlsReloadCollector reports the reloader's counters.
type tlsReloadCollector struct{ r *tlsReloader }

// Describe implements prometheus.Collector.
func (t tlsReloadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- tlsReloadDesc }

// Collect implements prometheus.Collector.
func (t tlsReloadCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(tlsReloadDesc, prometheus.CounterValue, float64(t.r.ok.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(tlsReloadDesc, prometheus.CounterValue, float64(t.r.fail.Load()), "error")
}

// startTLSReload registers the reload metric (always, so that it exists
// at 0 on every node) and starts the loop when some TLS material comes
// from files and reloading is not turned off.
func (c *Coordinator) startTLSReload() {
	col := tlsReloadCollector{&c.tlsReload}
	c.metrics.collectors = append(c.metrics.collectors, col)
	if c.metrics.reg != nil {
		if err := c.metrics.reg.Register(col); err != nil {
			c.log.Warn("registering metric", "error", err)
		}
	}
	if c.cfg.TLS == nil || !c.cfg.TLS.watchesFiles() || c.cfg.TLS.ReloadInterval < 0 {
		return
	}
	c.goLoop(c.tlsReloadLoop)
}
