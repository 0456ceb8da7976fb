package coordinator

import (
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are this coordinator's Prometheus collectors. They are
// registered on Config.Registerer only (nil: created, not registered).
type metrics struct {
	reg              prometheus.Registerer
	collectors       []prometheus.Collector
	leaderChanges    prometheus.Counter
	healthy          prometheus.Gauge
	failureTolerance prometheus.Gauge
	expiries         prometheus.Counter
}

func newMetrics(c *Coordinator) *metrics {
	m := &metrics{reg: c.cfg.Registerer}
	m.leaderChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "holdfast_raft_leadership_changes_total",
		Help: "Times this node gained or lost raft leadership.",
	})
	m.healthy = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "holdfast_autopilot_healthy",
		Help: "1 when autopilot on the leader sees every voter healthy (only set on the leader).",
	})
	m.failureTolerance = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "holdfast_autopilot_failure_tolerance",
		Help: "Voters that may fail without losing quorum, as autopilot on the leader sees it.",
	})
	m.expiries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "holdfast_session_expiries_total",
		Help: "Sessions this node expired as raft leader.",
	})
	isLeader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "holdfast_raft_leader",
		Help: "1 while this node is the raft leader.",
	}, func() float64 { return boolFloat(c.raft.State() == raft.Leader) })
	applied := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "holdfast_raft_applied_index",
		Help: "Raft index of the last entry applied to this node's replica.",
	}, func() float64 { return float64(c.fsm.View().Index()) })
	m.collectors = []prometheus.Collector{m.leaderChanges, m.healthy, m.failureTolerance, m.expiries, isLeader, applied}
	if m.reg != nil {
		for _, col := range m.collectors {
			if err := m.reg.Register(col); err != nil {
				c.log.Warn("registering metric", "error", err)
			}
		}
	}
	return m
}

// unregister removes this coordinator's collectors from the registerer.
func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, col := range m.collectors {
		m.reg.Unregister(col)
	}
}
