package session

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// EndMetrics count the ends of this node's grants (leases, permits, shard
// leases) by kind and reason, and observe how long each was held: the two
// families every part that holds grants shares by its "kind" label. Make
// them with NewEndMetrics; the caller registers Collectors. A nil
// *EndMetrics records nothing.
type EndMetrics struct {
	hold  *prometheus.HistogramVec // by kind
	ended *prometheus.CounterVec   // by kind and reason
}

// endReasons are the "reason" label values, in the order EndReason tries
// their causes ("lost" is every other cause). "resigned" is a grant its
// holder released: the label value is kept, as dashboards select on it.
var endReasons = []struct {
	err    error
	reason string
}{{wire.ErrReleased, "resigned"}, {wire.ErrRevoked, "revoked"}, {wire.ErrShutdown, "shutdown"}, {ErrExpired, "expired"}}

// NewEndMetrics makes the two families, with every reason's series of
// every kind in kinds present from the start.
func NewEndMetrics(kinds ...string) *EndMetrics {
	m := &EndMetrics{
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "holdfast_lease_hold_seconds",
			Help: "How long this node believed it held a lease, observed when the lease ends.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 12)}, []string{"kind"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_leases_lost_total",
			Help: "Leases this node stopped holding, by kind and reason (expired, revoked, resigned, shutdown, lost)."}, []string{"kind", "reason"}),
	}
	for _, kind := range kinds {
		for _, r := range endReasons {
			m.ended.WithLabelValues(kind, r.reason)
		}
		m.ended.WithLabelValues(kind, "lost")
	}
	return m
}

// Collectors returns the two families, for the caller to register.
func (m *EndMetrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return []prometheus.Collector{m.hold, m.ended}
}

// Ended counts the end of a grant of kind, believed from start, by its
// cause, and observes how long it was held.
func (m *EndMetrics) Ended(kind string, start time.Time, cause error) {
	if m == nil {
		return
	}
	m.hold.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	m.ended.WithLabelValues(kind, EndReason(cause)).Inc()
}

// Follow counts b's end under kind once it ends.
func (m *EndMetrics) Follow(kind string, b *Belief) {
	if m == nil {
		return
	}
	ctx := b.Context()
	context.AfterFunc(ctx, func() { m.Ended(kind, b.Start(), context.Cause(ctx)) })
}

// EndReason names why a grant ended, the "reason" label: the first of
// wire.ErrReleased ("resigned"), wire.ErrRevoked, wire.ErrShutdown and
// ErrExpired its cause wraps, else "lost".
func EndReason(cause error) string {
	for _, r := range endReasons {
		if errors.Is(cause, r.err) {
			return r.reason
		}
	}
	return "lost"
}
