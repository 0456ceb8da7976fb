package coordinator_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// scrapingRegisterer collects every collector the moment it is registered:
// the earliest a scrape could read it. A panic while collecting (a
// collector reading a part that does not exist yet) is recorded.
type scrapingRegisterer struct {
	*prometheus.Registry
	mu     sync.Mutex
	panics []string
}

func (r *scrapingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			r.mu.Lock()
			r.panics = append(r.panics, fmt.Sprint(p))
			r.mu.Unlock()
		}
	}()
	ch := make(chan prometheus.Metric, 1024) // more than any collector of ours yields
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil { // a GaugeFunc reads its value here
			return err
		}
	}
	return nil
}

func (r *scrapingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// TestMetricsScrapedDuringNew: a scrape that comes while New is still
// building the node (right as each collector is registered) reads every
// collector without meeting a part that does not exist yet.
func TestMetricsScrapedDuringNew(t *testing.T) {
	t.Parallel()
	reg := &scrapingRegisterer{Registry: prometheus.NewRegistry()}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) {
			c.Shards.Count = 4
			c.Registerer = reg
		}})
	cl.WaitFormed(formTimeout)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, p := range reg.panics {
		t.Errorf("collecting a collector as it was registered panicked: %s", p)
	}
	if n, err := reg.Gather(); err != nil || len(n) == 0 {
		t.Fatalf("gathered %d families, %v", len(n), err)
	}
}
