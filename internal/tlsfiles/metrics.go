package tlsfiles

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

var reloadsDesc = prometheus.NewDesc("holdfast_tls_reloads_total",
	"Changes of the TLS files: result=ok when the new certificate was installed, error when it could not be used (the old one stays).",
	[]string{"result"}, nil)

// Metrics count a Reloader's outcomes as holdfast_tls_reloads_total
// {result="ok"|"error"}. The zero value is ready; it is a
// prometheus.Collector the caller registers (both series exist at 0, also
// on a node that watches no file).
type Metrics struct {
	ok, fail atomic.Uint64
}

// Reloads returns the counts so far: changes installed, changes refused.
func (m *Metrics) Reloads() (ok, failed uint64) { return m.ok.Load(), m.fail.Load() }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- reloadsDesc }

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(reloadsDesc, prometheus.CounterValue, float64(m.ok.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(reloadsDesc, prometheus.CounterValue, float64(m.fail.Load()), "error")
}
