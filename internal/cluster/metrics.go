package cluster

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/membership"
)

// Metrics are the formation part's collectors: autopilot's verdict on the
// leader, the raft voters and the gossip members by state. Make them with
// NewMetrics and hand them to New (Options.Metrics); the caller registers
// Collectors. The voters and members are read at scrape time, and read 0
// until Join has attached gossip. A nil (or zero) *Metrics records nothing.
type Metrics struct {
	healthy          prometheus.Gauge
	failureTolerance prometheus.Gauge
	cl               atomic.Pointer[Cluster]
	collectors       []prometheus.Collector
}

var membersDesc = prometheus.NewDesc("holdfast_members", "Members gossip knows of, by state.", []string{"state"}, nil)

// NewMetrics makes the formation part's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		healthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_autopilot_healthy",
			Help: "1 when autopilot on the leader sees every voter healthy (only set on the leader)."}),
		failureTolerance: prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_autopilot_failure_tolerance",
			Help: "Voters that may fail without losing quorum, as autopilot on the leader sees it."}),
	}
	voters := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "holdfast_raft_voters", Help: "Voters in the raft configuration."},
		func() float64 {
			if cl := m.cl.Load(); cl != nil {
				return float64(len(cl.Voters()))
			}
			return 0
		})
	m.collectors = []prometheus.Collector{m.healthy, m.failureTolerance, voters, membersCollector{m}}
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

// health records the leader's autopilot verdict.
func (m *Metrics) health(healthy bool, failureTolerance int) {
	if m == nil || m.healthy == nil {
		return
	}
	v := 0.0
	if healthy {
		v = 1
	}
	m.healthy.Set(v)
	m.failureTolerance.Set(float64(failureTolerance))
}

// bind makes the scrape-time collectors read cl (once gossip is attached).
func (m *Metrics) bind(cl *Cluster) {
	if m != nil {
		m.cl.Store(cl)
	}
}

// membersCollector reports the members by gossip state, one series per
// state.
type membersCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (c membersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- membersDesc }

// Collect implements prometheus.Collector.
func (c membersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[membership.State]int{}
	if cl := c.m.cl.Load(); cl != nil {
		for _, mem := range cl.members.Members() {
			st := mem.State
			if st != membership.Alive && st != membership.Suspect && st != membership.Left {
				st = membership.Failed
			}
			counts[st]++
		}
	}
	for _, st := range []membership.State{membership.Alive, membership.Suspect, membership.Failed, membership.Left} {
		ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(counts[st]), st.String())
	}
}
