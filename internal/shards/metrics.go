package shards

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/fsm"
)

// latencyBuckets span 1ms to ~16s.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// Metrics are the shard collectors of both sides: the leader's handoffs,
// forced releases, handoff durations and unowned shard-seconds
// (Balancer), and this node's shard leases and the replica's shard counts,
// read from the Manager at scrape time (0 before NewManager). Make them
// with NewMetrics and hand the same value to NewManager and every
// Balancer (their Options.Metrics); the caller registers Collectors. A nil
// (or zero) *Metrics records nothing.
type Metrics struct {
	handoffs        prometheus.Counter
	forced          prometheus.Counter
	unownedSeconds  prometheus.Counter
	handoffDuration prometheus.Observer
	acquireWait     prometheus.Observer
	state           atomic.Pointer[managerState]
	balance         *balanceMetrics // metrics_balance.go
	collectors      []prometheus.Collector
}

// managerState is what the scrape-time gauges read from the Manager.
type managerState struct {
	owned func() int
	view  func() *fsm.View
}

// NewMetrics makes the shard collectors. acquireWait is the shared lease
// acquire wait family's series for shards, observed at every lease's start
// with how long the shard was seen free (nil: not observed).
func NewMetrics(acquireWait prometheus.Observer) *Metrics {
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "holdfast_shard_handoff_duration_seconds",
		Help: "Raft leader: from a shard's revoke to its grant to the next owner.", Buckets: latencyBuckets})
	m := &Metrics{
		handoffs: counter("holdfast_shard_handoffs_total", "Shard revokes this node committed as raft leader (handoffs started)."),
		forced: counter("holdfast_shard_forced_releases_total",
			"Revoked shards this node forced free as raft leader, a full TTL after the revoke."),
		unownedSeconds:  counter("holdfast_shards_unowned_seconds_total", "Raft leader: shard-seconds spent with no owner (summed over shards)."),
		handoffDuration: duration,
		acquireWait:     acquireWait,
		balance:         newBalanceMetrics(),
	}
	g := func(opts prometheus.GaugeOpts, f func(s *managerState) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(opts, func() float64 {
			if s := m.state.Load(); s != nil {
				return float64(f(s))
			}
			return 0
		})
	}
	owned := func(s *managerState) int { return s.owned() }
	m.collectors = []prometheus.Collector{m.handoffs, m.forced, duration, m.unownedSeconds,
		g(prometheus.GaugeOpts{Name: "holdfast_leases_held", Help: "Leases this node holds now, by kind.",
			ConstLabels: prometheus.Labels{"kind": "shard"}}, owned),
		g(prometheus.GaugeOpts{Name: "holdfast_shards_owned", Help: "Shards this node owns now (live shard leases)."}, owned),
		g(prometheus.GaugeOpts{Name: "holdfast_shards_unowned", Help: "Shards with no owner in this node's replica."},
			func(s *managerState) int { return FreeShards(s.view()) }),
		g(prometheus.GaugeOpts{Name: "holdfast_shards", Help: "The cluster's shard count (0 before this node knows it)."},
			func(s *managerState) int { return s.view().ShardCount() }),
		m.balance.moves, m.balance,
	}
	return m
}

// Collectors returns the shard collectors (not the shared acquire wait
// family), for the caller to register (nil for a nil *Metrics).
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return m.collectors
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func add(c prometheus.Counter, v float64) {
	if c != nil {
		c.Add(v)
	}
}

func (m *Metrics) handedOff(n int) {
	if m != nil {
		add(m.handoffs, float64(n))
	}
}

func (m *Metrics) forcedFree(n int) {
	if m != nil {
		add(m.forced, float64(n))
	}
}

func (m *Metrics) unowned(shardSeconds float64) {
	if m != nil {
		add(m.unownedSeconds, shardSeconds)
	}
}

func (m *Metrics) handoffTook(d time.Duration) {
	if m != nil && m.handoffDuration != nil {
		m.handoffDuration.Observe(d.Seconds())
	}
}

func (m *Metrics) waited(d time.Duration) {
	if m != nil && m.acquireWait != nil {
		m.acquireWait.Observe(d.Seconds())
	}
}

// bind makes the scrape-time gauges read a Manager's leases and replica.
func (m *Metrics) bind(owned func() int, view func() *fsm.View) {
	if m != nil {
		m.state.Store(&managerState{owned: owned, view: view})
	}
}
