package coordinator

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// Lease kinds, the "kind" label of lease metrics.
const (
	kindLeader = "leader"
	kindShard  = "shard"
)

// metrics are this coordinator's Prometheus collectors, registered on
// Config.Registerer only (nil: created, not registered). Values derived
// from state are read at scrape time (GaugeFunc, collectors); events are
// counted where they happen. docs/METRICS.md lists every metric.
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	leaderChanges     prometheus.Counter
	healthy           prometheus.Gauge
	failureTolerance  prometheus.Gauge
	expiries          prometheus.Counter
	keepAliveLatency  prometheus.Histogram
	keepAliveFailures prometheus.Counter
	acquireWait       *prometheus.HistogramVec
	holdTime          *prometheus.HistogramVec
	leasesEnded       *prometheus.CounterVec
	handoffs          prometheus.Counter
	forced            prometheus.Counter
	handoffDuration   prometheus.Histogram
	unownedSeconds    prometheus.Counter
	forwardsRefused   prometheus.Counter
	forwardsExpired   prometheus.Counter
	settlements       *prometheus.CounterVec
}

// latencyBuckets span 1ms to ~16s.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// holdBuckets span 10ms to ~12h.
var holdBuckets = prometheus.ExponentialBuckets(0.01, 4, 12)

func newMetrics(c *Coordinator) *metrics {
	m := &metrics{reg: c.cfg.Registerer}
	m.newEventMetrics()
	m.collectors = append(m.collectors, m.leaderChanges, m.healthy, m.failureTolerance, m.expiries,
		m.keepAliveLatency, m.keepAliveFailures, m.acquireWait, m.holdTime, m.leasesEnded,
		m.handoffs, m.forced, m.handoffDuration, m.unownedSeconds, m.forwardsRefused, m.forwardsExpired, m.settlements, &stateCollector{c: c},
		&transportCollector{c: c}, &c.tlsMetrics)
	m.collectors = append(m.collectors, gaugeFuncs(c)...)
	if m.reg != nil {
		for _, col := range m.collectors {
			if err := m.reg.Register(col); err != nil {
				c.log.Warn("registering metric", "error", err)
			}
		}
	}
	return m
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// boolFloat is 1 for true, 0 for false.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (m *metrics) newEventMetrics() {
	m.leaderChanges = counter("holdfast_raft_leadership_changes_total", "Times this node gained or lost raft leadership.")
	m.healthy = prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_autopilot_healthy",
		Help: "1 when autopilot on the leader sees every voter healthy (only set on the leader)."})
	m.failureTolerance = prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_autopilot_failure_tolerance",
		Help: "Voters that may fail without losing quorum, as autopilot on the leader sees it."})
	m.expiries = counter("holdfast_session_expiries_total", "Sessions this node expired as raft leader.")
	m.keepAliveLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "holdfast_keepalive_duration_seconds",
		Help: "Round trip of answered keepalives, send to answer (the leader's confirmation round included).", Buckets: latencyBuckets})
	m.keepAliveFailures = counter("holdfast_keepalive_failures_total", "Keepalives that failed or were refused.")
	m.acquireWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "holdfast_lease_acquire_wait_seconds",
		Help:    "Leader leases: from Campaign/TryAcquire to the grant. Shard leases: how long the shard was seen free before this node's grant.",
		Buckets: latencyBuckets}, []string{"kind"})
	m.holdTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "holdfast_lease_hold_seconds",
		Help: "How long this node believed it held a lease, observed when the lease ends.", Buckets: holdBuckets}, []string{"kind"})
	m.leasesEnded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_leases_lost_total",
		Help: "Leases this node stopped holding, by kind and reason (expired, revoked, resigned, shutdown, lost)."}, []string{"kind", "reason"})
	m.handoffs = counter("holdfast_shard_handoffs_total", "Shard revokes this node committed as raft leader (handoffs started).")
	m.forced = counter("holdfast_shard_forced_releases_total", "Revoked shards this node forced free as raft leader, a full TTL after the revoke.")
	m.handoffDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "holdfast_shard_handoff_duration_seconds",
		Help: "Raft leader: from a shard's revoke to its grant to the next owner.", Buckets: latencyBuckets})
	m.forwardsRefused = counter("holdfast_forwards_refused_total",
		"Commands forwarded to this node as raft leader that were refused because too many were pending.")
	m.forwardsExpired = counter("holdfast_forwards_expired_total",
		"Commands forwarded to this node as raft leader that it dropped unapplied because their sender's budget had run out.")
	m.settlements = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_lease_settlements_total",
		Help: "Lease requests this node settled in the background after their caller stopped waiting (acquire: a cancelled Campaign or TryAcquire; resign: a release Resign could not deliver in time; sem-acquire and sem-release: the same for semaphore permits)."},
		[]string{"op"})
	for _, op := range []string{"acquire", "resign", "sem-acquire", "sem-release"} {
		m.settlements.WithLabelValues(op)
	}
	m.unownedSeconds = counter("holdfast_shards_unowned_seconds_total", "Raft leader: shard-seconds spent with no owner (summed over shards).")
	for _, kind := range []string{kindLeader, kindShard, kindSemaphore} {
		for _, reason := range []string{"expired", "revoked", "resigned", "shutdown", "lost"} {
			m.leasesEnded.WithLabelValues(kind, reason)
		}
	}
}

// gaugeFuncs are the values read from the replica, raft and the session at
// scrape time.
func gaugeFuncs(c *Coordinator) []prometheus.Collector {
	g := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	held := func(kind string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "holdfast_leases_held",
			Help: "Leases this node holds now, by kind.", ConstLabels: prometheus.Labels{"kind": kind}}, f)
	}
	return []prometheus.Collector{
		g("holdfast_raft_leader", "1 while this node is the raft leader.",
			func() float64 { return boolFloat(c.raft.State() == raft.Leader) }),
		g("holdfast_raft_applied_index", "Raft index of the last entry applied to this node's replica.",
			func() float64 { return float64(c.fsm.View().Index()) }),
		g("holdfast_raft_commit_index", "Raft commit index as this node knows it.",
			func() float64 { return float64(c.raft.CommitIndex()) }),
		g("holdfast_raft_term", "This node's current raft term.",
			func() float64 { return float64(c.raft.CurrentTerm()) }),
		g("holdfast_raft_last_contact_seconds", "Seconds since this node last heard from the raft leader (0 on the leader).",
			func() float64 { return lastContact(c) }),
		g("holdfast_raft_voters", "Voters in the raft configuration.",
			func() float64 { return float64(len(c.Voters())) }),
		g("holdfast_session_ttl_seconds", "The configured session TTL (to compare keepalive latency and remaining time with).",
			func() float64 { return c.cfg.Session.TTL.Seconds() }),
		g("holdfast_session_remaining_seconds", "How long this node may still believe in its session without another answered keepalive.",
			func() float64 { return sessionRemaining(c).Seconds() }),
		held(kindLeader, func() float64 { return float64(c.heldLeases()) }),
		held(kindShard, func() float64 { return float64(c.shards.Count()) }),
		g("holdfast_shards_owned", "Shards this node owns now (live shard leases).",
			func() float64 { return float64(c.shards.Count()) }),
		g("holdfast_shards_unowned", "Shards with no owner in this node's replica.",
			func() float64 { return float64(shards.FreeShards(c.fsm.View())) }),
		g("holdfast_shards", "The cluster's shard count (0 before this node knows it).",
			func() float64 { return float64(c.fsm.View().ShardCount()) }),
	}
}

func lastContact(c *Coordinator) float64 {
	if c.raft.State() == raft.Leader {
		return 0
	}
	t := c.raft.LastContact()
	if t.IsZero() {
		return 0
	}
	return time.Since(t).Seconds()
}

func sessionRemaining(c *Coordinator) time.Duration {
	if s, _ := c.currentSession(); s != nil {
		return s.Remaining()
	}
	return 0
}

func (c *Coordinator) heldLeases() int {
	if c.leases == nil {
		return 0
	}
	return c.leases.Held(leases.Leader)
}

// stateCollector reports the members by gossip state and the raft state,
// one series per state.
type stateCollector struct{ c *Coordinator }

var (
	membersDesc = prometheus.NewDesc("holdfast_members", "Members gossip knows of, by state.", []string{"state"}, nil)
	raftDesc    = prometheus.NewDesc("holdfast_raft_state", "1 for this node's current raft state, 0 for the others.", []string{"state"}, nil)
)

// Describe implements prometheus.Collector.
func (s *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- membersDesc
	ch <- raftDesc
}

// Collect implements prometheus.Collector.
func (s *stateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[MemberState]int{}
	if s.c.members != nil {
		for _, m := range s.c.Members() {
			counts[m.State]++
		}
	}
	for _, st := range []MemberState{MemberAlive, MemberSuspect, MemberFailed, MemberLeft} {
		ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
	cur := s.c.RaftState()
	for _, st := range []RaftState{StateFollower, StateCandidate, StateLeader, StateShutdown} {
		ch <- prometheus.MustNewConstMetric(raftDesc, prometheus.GaugeValue, boolFloat(st == cur), string(st))
	}
}

// leaseEnded counts a lease's end by reason and observes its hold time.
func (m *metrics) leaseEnded(kind string, start time.Time, cause error) {
	if m == nil {
		return
	}
	m.holdTime.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	m.leasesEnded.WithLabelValues(kind, endReason(cause)).Inc()
}

// endReason names why a lease ended.
func endReason(cause error) string {
	switch {
	case errors.Is(cause, ErrReleased):
		return "resigned"
	case errors.Is(cause, ErrRevoked):
		return "revoked"
	case errors.Is(cause, ErrShutdown):
		return "shutdown"
	case errors.Is(cause, ErrSessionExpired):
		return "expired"
	default:
		return "lost"
	}
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

// transportCollector reports the transport's counters of refused input.
type transportCollector struct{ c *Coordinator }

var refusedDesc = prometheus.NewDesc("holdfast_transport_refused_total",
	"Inbound connections and frames the RPC/raft port refused, by reason.", []string{"reason"}, nil)

// Describe implements prometheus.Collector.
func (t *transportCollector) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

// Collect implements prometheus.Collector.
func (t *transportCollector) Collect(ch chan<- prometheus.Metric) {
	if t.c.trans == nil {
		return
	}
	st := t.c.trans.Stats()
	for reason, n := range map[string]uint64{
		"too_many_conns": st.RejectedConns, "bad_handshake": st.BadHandshakes, "wrong_target": st.WrongTarget,
		"oversized_frame": st.OversizedFrames, "bad_frame": st.BadFrames,
		"tls_handshake": st.TLSHandshakeFailures, "plaintext_refused": st.PlaintextRefused,
		"wrong_peer_name": st.WrongPeerName,
	} {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(n), reason)
	}
}
