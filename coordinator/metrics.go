package coordinator

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/lifecycle"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/shards"
)

const kindShard = "shard" // the "kind" label of shard leases in the lease metrics

// metrics are this coordinator's Prometheus collectors: each part's own,
// handed to it through its options, and the lease families the parts share
// by their "kind" label. docs/METRICS.md lists every metric.
type metrics struct {
	raft        *raftnode.Metrics
	cluster     *cluster.Metrics
	session     *session.Metrics
	leases      *leases.Metrics
	shards      *shards.Metrics
	acquireWait *prometheus.HistogramVec // by kind
	ends        *session.EndMetrics      // grants' ends and hold times, by kind
	registered  *lifecycle.Registered    // by register
}

func newMetrics() *metrics {
	m := &metrics{raft: raftnode.NewMetrics(), cluster: cluster.NewMetrics(), session: session.NewMetrics(),
		acquireWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "holdfast_lease_acquire_wait_seconds",
			Help:    "Leases and permits: from Acquire/TryAcquire (AcquireSemaphore/TryAcquireSemaphore) to the grant. Shard leases: how long the shard was seen free before this node's grant.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"kind"}),
		ends: session.NewEndMetrics(leases.Lease.String(), kindShard, kindSemaphore),
	}
	wait := map[string]prometheus.ObserverVec{} // the acquire wait family curried per kind
	for _, kind := range []string{leases.Lease.String(), kindShard, kindSemaphore} {
		wait[kind] = m.acquireWait.MustCurryWith(prometheus.Labels{"kind": kind})
	}
	m.leases = leases.NewMetrics(map[leases.Kind]prometheus.ObserverVec{leases.Lease: wait[leases.Lease.String()],
		leases.Semaphore: wait[kindSemaphore]}, m.ends)
	m.shards = shards.NewMetrics(wait[kindShard].WithLabelValues())
	return m
}

// register registers every collector on reg (nil: none) once every part
// exists, so no scrape meets a part not yet built. A refused collector
// (another coordinator's, on a shared registry) is logged, then left alone.
func (m *metrics) register(log *slog.Logger, reg prometheus.Registerer, more ...prometheus.Collector) {
	m.registered = lifecycle.Register(log, reg, []prometheus.Collector{m.acquireWait}, m.ends.Collectors(), more, m.raft.Collectors(),
		m.cluster.Collectors(), m.session.Collectors(), m.leases.Collectors(), m.shards.Collectors())
}

// unregister removes the collectors register registered.
func (m *metrics) unregister() { m.registered.Unregister() }
