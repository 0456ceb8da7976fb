package leases

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	reg.MustRegister(NewMetrics(nil).Collectors()...)
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
