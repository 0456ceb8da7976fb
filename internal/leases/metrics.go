package leases

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/session"
)

// Metrics are the part's collectors: the settlements, the leader leases
// held now (read from the part at scrape time, 0 before New), and the
// acquire waits observed into a family the caller shares with other parts.
// Make them with NewMetrics and hand them to New (Options.Metrics); the
// caller registers Collectors. A nil (or zero) *Metrics records nothing.
type Metrics struct {
	wait        map[Kind]prometheus.ObserverVec
	ends        *session.EndMetrics
	settlements *prometheus.CounterVec
	part        atomic.Pointer[Manager]
	collectors  []prometheus.Collector
}

// NewMetrics makes the part's collectors. wait holds, by kind, the acquire
// wait histogram curried to that kind (no label left), whose series
// appears at its first observation; a kind missing is not observed. ends
// (shared with the other parts that hold grants, and registered by the
// caller) counts every grant's end under its kind's label (nil: not
// counted).
func NewMetrics(wait map[Kind]prometheus.ObserverVec, ends *session.EndMetrics) *Metrics {
	m := &Metrics{wait: wait, ends: ends, settlements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_lease_settlements_total",
		Help: "Lease requests this node settled in the background after their caller stopped waiting (acquire: a cancelled Acquire or TryAcquire; resign: a lease release Release could not deliver in time; sem-acquire and sem-release: the same for semaphore permits)."},
		[]string{"op"})}
	for _, op := range []string{"acquire", "resign", "sem-acquire", "sem-release"} {
		m.settlements.WithLabelValues(op)
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "holdfast_leases_held",
		Help: "Leases this node holds now, by kind.", ConstLabels: prometheus.Labels{"kind": Lease.String()}},
		func() float64 {
			if p := m.part.Load(); p != nil {
				return float64(p.Held(Lease))
			}
			return 0
		})
	m.collectors = []prometheus.Collector{m.settlements, held}
	return m
}

// Collectors returns the part's own collectors (not the shared acquire
// wait family), for the caller to register (nil for a nil *Metrics).
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return m.collectors
}

// waited observes an acquire of kind k that waited d.
func (m *Metrics) waited(k Kind, d time.Duration) {
	if m == nil || m.wait[k] == nil {
		return
	}
	m.wait[k].WithLabelValues().Observe(d.Seconds())
}

// followEnd counts the end of a grant of kind k, believed by b, once it
// ends.
func (m *Metrics) followEnd(k Kind, b *session.Belief) {
	if m != nil {
		m.ends.Follow(k.String(), b)
	}
}

// settled counts one settlement of op label.
func (m *Metrics) settled(label string) {
	if m != nil && m.settlements != nil {
		m.settlements.WithLabelValues(label).Inc()
	}
}

// bind makes the held gauge read p.
func (m *Metrics) bind(p *Manager) {
	if m != nil {
		m.part.Store(p)
	}
}
