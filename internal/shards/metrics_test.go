package shards

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
	none.handedOff(1)
	none.forcedFree(1)
	none.unowned(1)
	none.handoffTook(time.Second)
	none.waited(time.Second)
	none.bind(nil, nil)
	var zero Metrics
	zero.handedOff(1)
	zero.handoffTook(time.Second)
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
