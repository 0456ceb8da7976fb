package shards

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// balanceMetrics are the leader's placement collectors: moves started by
// reason, and each node's load, capacity and target as the latest round
// saw them.
type balanceMetrics struct {
	moves       *prometheus.CounterVec
	latest      atomic.Pointer[func() *PlanReport]
	load        *prometheus.Desc
	cap         *prometheus.Desc
	target      *prometheus.Desc
	unplaceable *prometheus.Desc
}

func newBalanceMetrics() *balanceMetrics {
	return &balanceMetrics{
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_balancer_moves_total",
			Help: "Raft leader: shard grants and handoffs the balancer started, each counted once, by reason (free, count, load, pin, rule, drain)."}, []string{"reason"}),
		load: prometheus.NewDesc("holdfast_node_load",
			"Raft leader: each node's load at the latest planning round (reported load, or shards when no load is reported).", []string{"node", "session"}, nil),
		cap: prometheus.NewDesc("holdfast_node_capacity",
			"Raft leader: each node's shard capacity (Config.Shards.Weight) at the latest planning round.", []string{"node", "session"}, nil),
		target: prometheus.NewDesc("holdfast_node_load_target",
			"Raft leader: the load the balancer aims each node at (in the unit of holdfast_node_load).", []string{"node", "session"}, nil),
		unplaceable: prometheus.NewDesc("holdfast_shards_unplaceable",
			"Raft leader: shards whose placement rules no eligible node passes at the latest planning round (they stay unowned; waiting=\"true\": a node not eligible yet passes them).",
			[]string{"waiting"}, nil),
	}
}

// Describe implements prometheus.Collector (the per-node gauges).
func (b *balanceMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.load
	ch <- b.cap
	ch <- b.target
	ch <- b.unplaceable
}

// Collect implements prometheus.Collector: the per-node gauges of the
// latest report, none when this node has no report (it does not lead).
func (b *balanceMetrics) Collect(ch chan<- prometheus.Metric) {
	f := b.latest.Load()
	if f == nil {
		return
	}
	rep := (*f)()
	if rep == nil {
		return
	}
	for _, m := range rep.Members {
		ch <- prometheus.MustNewConstMetric(b.load, prometheus.GaugeValue, m.Load, m.Node, m.ID)
		ch <- prometheus.MustNewConstMetric(b.cap, prometheus.GaugeValue, m.Capacity, m.Node, m.ID)
		ch <- prometheus.MustNewConstMetric(b.target, prometheus.GaugeValue, m.Target, m.Node, m.ID)
	}
	waiting := 0
	for _, u := range rep.Unplaceable {
		if u.Waiting {
			waiting++
		}
	}
	ch <- prometheus.MustNewConstMetric(b.unplaceable, prometheus.GaugeValue, float64(len(rep.Unplaceable)-waiting), "false")
	ch <- prometheus.MustNewConstMetric(b.unplaceable, prometheus.GaugeValue, float64(waiting), "true")
}

// moved counts one move the balancer started for reason.
func (m *Metrics) moved(reason string) {
	if m != nil && m.balance != nil {
		m.balance.moves.WithLabelValues(reason).Inc()
	}
}

// BindPlan makes the per-node gauges read the latest plan report from
// latest (which returns nil when there is none).
func (m *Metrics) BindPlan(latest func() *PlanReport) {
	if m != nil && m.balance != nil {
		m.balance.latest.Store(&latest)
	}
}
