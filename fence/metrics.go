package fence

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values of holdfast_fence_rejections_total's "kind" label.
const (
	kindMemory = "memory"
	kindSQL    = "sql"
)

// newRejections returns the holdfast_fence_rejections_total counter for one
// kind of resource. With a nil Registerer the counter is created but not
// registered. If an identical collector is already registered on reg (a
// second Memory or SQL on the same registry), that collector is shared, so
// the instances add to one series per kind. Any other registration error
// (the name taken by a different metric) is returned.
func newRejections(reg prometheus.Registerer, kind string) (prometheus.Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "holdfast_fence_rejections_total",
		Help: "Writes rejected because their fencing token was lower than one already accepted.",
	}, []string{"kind"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, err
			}
			vec = existing
		}
	}
	return vec.WithLabelValues(kind), nil
}
