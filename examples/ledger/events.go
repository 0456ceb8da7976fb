package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// printer writes the machine-readable event lines on stdout: an event name
// and key=value pairs, one line per event. It is safe for concurrent use.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

// say writes event with the key/value pairs kv (key, value, key, value…).
func (p *printer) say(event string, kv ...any) {
	var b strings.Builder
	b.WriteString(event)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	b.WriteByte('\n')
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, b.String())
}

// Outcomes of an append, the label values of ledger_writes_total.
const (
	outcomeAccepted    = "accepted"
	outcomeFenced      = "fenced"
	outcomeCheckFailed = "check_failed"
	outcomeError       = "error"
)

// metrics are the ledger's own counters, on the registry holdfast's share.
type metrics struct {
	writes *prometheus.CounterVec // by outcome
	audits *prometheus.CounterVec // by result: ok, violation
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ledger_writes_total",
			Help: "Append attempts by outcome: accepted, fenced (refused by the fence), check_failed (the lease check failed first), error.",
		}, []string{"outcome"}),
		audits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ledger_audits_total",
			Help: "Audits of the ledger's invariants recorded by this node, by result: ok or violation.",
		}, []string{"result"}),
	}
	for _, o := range []string{outcomeAccepted, outcomeFenced, outcomeCheckFailed, outcomeError} {
		m.writes.WithLabelValues(o)
	}
	m.audits.WithLabelValues("ok")
	m.audits.WithLabelValues("violation")
	reg.MustRegister(m.writes, m.audits)
	return m
}
