package raftnode

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the raft host's collectors: leadership changes, the
// forwarded commands the leader did not propose, raft's progress and
// state, and the transport's refusals. Make them with NewMetrics and hand
// them to Start (Options.Metrics) and ServeForwards; the caller registers
// Collectors. The gauges read the node at scrape time, and read 0 until
// Start has bound them to it. A nil (or zero) *Metrics counts nothing.
type Metrics struct {
	leaderChanges prometheus.Counter
	refused       prometheus.Counter
	expired       prometheus.Counter
	storageErrors *prometheus.CounterVec
	node          atomic.Pointer[Node]
	collectors    []prometheus.Collector
}

// NewMetrics makes the raft host's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		leaderChanges: counter("holdfast_raft_leadership_changes_total", "Times this node gained or lost raft leadership."),
		refused: counter("holdfast_forwards_refused_total",
			"Commands forwarded to this node as raft leader that were refused because too many were pending."),
		expired: counter("holdfast_forwards_expired_total",
			"Commands forwarded to this node as raft leader that it dropped unapplied because their sender's budget had run out."),
	}
	g := func(name, help string, f func(n *Node) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if n := m.node.Load(); n != nil {
				return f(n)
			}
			return 0
		})
	}
	m.storageErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_storage_errors_total",
		Help: "Errors of this node's raft storage (log and stable store on disk), by operation: append, delete, stable (term and vote), remove (a deleted segment's file)."},
		[]string{"op"})
	for _, op := range []string{"append", "delete", "stable", "remove"} {
		m.storageErrors.WithLabelValues(op)
	}
	m.collectors = []prometheus.Collector{m.leaderChanges, m.refused, m.expired, m.storageErrors,
		g("holdfast_storage_healthy", "1 while this node's raft storage takes writes, 0 while a write of its log or of its term and vote fails (see /v1/status).",
			func(n *Node) float64 { return boolFloat(!n.StorageHealth().Failing) }),
		g("holdfast_raft_leader", "1 while this node is the raft leader.",
			func(n *Node) float64 { return boolFloat(n.raft.State() == raft.Leader) }),
		g("holdfast_raft_applied_index", "Raft index of the last entry applied to this node's replica.",
			func(n *Node) float64 { return float64(n.applied()) }),
		g("holdfast_raft_commit_index", "Raft commit index as this node knows it.",
			func(n *Node) float64 { return float64(n.raft.CommitIndex()) }),
		g("holdfast_raft_term", "This node's current raft term.",
			func(n *Node) float64 { return float64(n.raft.CurrentTerm()) }),
		g("holdfast_raft_last_contact_seconds", "Seconds since this node last heard from the raft leader (0 on the leader).",
			lastContact),
		stateCollector{m}, transportCollector{m},
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

// LeadershipChanged counts one leadership change (raft's NotifyCh).
func (m *Metrics) LeadershipChanged() {
	if m != nil {
		inc(m.leaderChanges)
	}
}

// storageError counts one storage error of op.
func (m *Metrics) storageError(op string) {
	if m != nil && m.storageErrors != nil {
		m.storageErrors.WithLabelValues(op).Inc()
	}
}

func (m *Metrics) forwardRefused() {
	if m != nil {
		inc(m.refused)
	}
}

func (m *Metrics) forwardExpired() {
	if m != nil {
		inc(m.expired)
	}
}

// inc counts one on c, if there is one (a zero Metrics has none).
func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// bind makes the gauges read n.
func (m *Metrics) bind(n *Node) {
	if m != nil {
		m.node.Store(n)
	}
}

// applied is the replica's applied index (Options.Applied), or 0.
func (n *Node) applied() uint64 {
	if n.opts.Applied == nil {
		return 0
	}
	return n.opts.Applied()
}

func lastContact(n *Node) float64 {
	if n.raft.State() == raft.Leader {
		return 0
	}
	t := n.raft.LastContact()
	if t.IsZero() {
		return 0
	}
	return time.Since(t).Seconds()
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	raftDesc = prometheus.NewDesc("holdfast_raft_state", "1 for this node's current raft state, 0 for the others.",
		[]string{"state"}, nil)
	refusedDesc = prometheus.NewDesc("holdfast_transport_refused_total",
		"Inbound connections and frames the RPC/raft port refused, by reason.", []string{"reason"}, nil)
)

// stateCollector reports the raft state, one series per state (all 0
// before the node is bound).
type stateCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (s stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- raftDesc }

// Collect implements prometheus.Collector.
func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := s.m.node.Load()
	var cur raft.RaftState
	if n != nil {
		cur = n.raft.State()
	}
	for _, st := range []struct {
		state raft.RaftState
		label string
	}{{raft.Follower, "follower"}, {raft.Candidate, "candidate"}, {raft.Leader, "leader"}, {raft.Shutdown, "shutdown"}} {
		ch <- prometheus.MustNewConstMetric(raftDesc, prometheus.GaugeValue, boolFloat(n != nil && st.state == cur), st.label)
	}
}

// transportCollector reports the transport's counters of refused input.
type transportCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (t transportCollector) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

// Collect implements prometheus.Collector.
func (t transportCollector) Collect(ch chan<- prometheus.Metric) {
	n := t.m.node.Load()
	if n == nil || n.opts.Trans == nil {
		return
	}
	st := n.opts.Trans.Stats()
	for reason, v := range map[string]uint64{
		"too_many_conns": st.RejectedConns, "bad_handshake": st.BadHandshakes, "wrong_target": st.WrongTarget,
		"oversized_frame": st.OversizedFrames, "bad_frame": st.BadFrames,
		"tls_handshake": st.TLSHandshakeFailures, "plaintext_refused": st.PlaintextRefused,
		"wrong_peer_name": st.WrongPeerName, "foreign_cluster": st.ForeignCluster,
		"foreign_raft": n.trans.guard.refused.Load(),
	} {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(v), reason)
	}
}
