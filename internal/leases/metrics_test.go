package leases

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestMetricsNilAndUnbound: a nil or zero *Metrics records nothing and has no
// collectors, and collectors not yet bound to their part register, gather
// and read 0 (a scrape before the part exists).
func TestMetricsNilAndUnbound(t *testing.T) {
	var none *Metrics
	none.waited(Lease, time.Second)
	none.settled("acquire")
	none.bind(nil)
	zero := &Metrics{}
	zero.waited(Lease, time.Second)
	zero.settled("acquire")
	if cols := none.Collectors(); cols != nil {
		t.Fatalf("a nil *Metrics has %d collectors", len(cols))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewMetrics(nil, nil).Collectors()...)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Fatalf("gathered %d families: %v", len(mfs), err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount()); v != 0 {
				t.Errorf("%s%v reads %v before any event", mf.GetName(), m.GetLabel(), v)
			}
		}
	}
}

// TestGrantEndCounted: a grant's end is counted under its kind and reason
// by the part itself (Metrics' EndMetrics), without the caller being told.
func TestGrantEndCounted(t *testing.T) {
	h := newHarness(t)
	g := h.acquire(req(Lease, "x", true))
	if err := g.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.ends.Collectors()...)
	testkit.Eventually(t, "the release counted", waitFor, func() error {
		if n := counterOf(t, reg, "holdfast_leases_lost_total", "leader", "resigned"); n != 1 {
			return fmt.Errorf("kind=leader reason=resigned reads %v, want 1", n)
		}
		return nil
	})
}

// counterOf reads the counter of family name with labels kind and reason.
func counterOf(t *testing.T, reg *prometheus.Registry, name, kind, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
