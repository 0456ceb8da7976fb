package session

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets span 1ms to ~16s.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// Metrics are the session collectors of both sides: the leader's expiries
// (Lessor), and the holder's keepalives, TTL and remaining belief
// (Client). Make them with NewMetrics and hand the same value to
// NewClient and NewLessor (their Options.Metrics); the caller registers
// Collectors. The TTL and remaining time are read from the Client at
// scrape time (0 before NewClient). A nil (or zero) *Metrics records nothing.
type Metrics struct {
	expiries          prometheus.Counter
	stalls            prometheus.Counter
	stalledSeconds    prometheus.Counter
	keepAliveLatency  prometheus.Histogram
	keepAliveFailures prometheus.Counter
	client            atomic.Pointer[Client]
	collectors        []prometheus.Collector
}

// NewMetrics makes the session collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		expiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "holdfast_session_expiries_total",
			Help: "Sessions this node expired as raft leader."}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "holdfast_lessor_stalls_total",
			Help: "Times this node's lessor, as raft leader, found it had not run for longer than its stall threshold and extended every session's deadline by the gap."}),
		stalledSeconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "holdfast_lessor_stalled_seconds_total",
			Help: "Total length of the lessor stalls counted by holdfast_lessor_stalls_total."}),
		keepAliveLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "holdfast_keepalive_duration_seconds",
			Help:    "Round trip of answered keepalives, send to answer (the leader's confirmation round included).",
			Buckets: latencyBuckets}),
		keepAliveFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "holdfast_keepalive_failures_total",
			Help: "Keepalives that failed or were refused."}),
	}
	g := func(name, help string, f func(c *Client) time.Duration) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if c := m.client.Load(); c != nil {
				return f(c).Seconds()
			}
			return 0
		})
	}
	m.collectors = []prometheus.Collector{m.expiries, m.stalls, m.stalledSeconds, m.keepAliveLatency, m.keepAliveFailures,
		g("holdfast_session_ttl_seconds", "The configured session TTL (to compare keepalive latency and remaining time with).",
			func(c *Client) time.Duration { return c.o.TTL }),
		g("holdfast_session_remaining_seconds", "How long this node may still believe in its session without another answered keepalive.",
			func(c *Client) time.Duration {
				if s, _ := c.Current(); s != nil {
					return s.Remaining()
				}
				return 0
			}),
	}
	return m
}

// Collectors returns every collector, for the caller to register (nil for
// a nil *Metrics).
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return m.collectors
}

func (m *Metrics) expired() {
	if m != nil && m.expiries != nil {
		m.expiries.Inc()
	}
}

func (m *Metrics) stalled(gap time.Duration) {
	if m != nil && m.stalls != nil {
		m.stalls.Inc()
		m.stalledSeconds.Add(gap.Seconds())
	}
}

func (m *Metrics) keepAliveAnswered(rtt time.Duration) {
	if m != nil && m.keepAliveLatency != nil {
		m.keepAliveLatency.Observe(rtt.Seconds())
	}
}

func (m *Metrics) keepAliveFailed() {
	if m != nil && m.keepAliveFailures != nil {
		m.keepAliveFailures.Inc()
	}
}

// bind makes the scrape-time gauges read c.
func (m *Metrics) bind(c *Client) {
	if m != nil {
		m.client.Store(c)
	}
}
