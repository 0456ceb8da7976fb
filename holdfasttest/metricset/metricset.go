package metricset

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// timeout bounds each wait of Gather; generous for a loaded machine.
const timeout = 2 * time.Minute

// Name matches a holdfast metric name anywhere in a text: queries,
// descriptions, rule files.
var Name = regexp.MustCompile(`\bholdfast_[a-zA-Z0-9_]+`)

// Resolve maps a name used in a query to its metric family: the name
// itself, or a histogram's name with a series suffix (_bucket, _sum,
// _count) stripped. It reports false for a name that is neither.
func Resolve(families map[string]dto.MetricType, name string) (string, bool) {
	if _, ok := families[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if found && families[base] == dto.MetricType_HISTOGRAM {
			return base, true
		}
	}
	return "", false
}

// Gather starts a single-node cluster with 16 shards and a fence on one
// registry, makes every lease metric observe once (shard grants, a leader
// lease won and resigned), and returns the type of every holdfast family
// gathered. The cluster stops when the test ends.
func Gather(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	const shards = 16
	reg := prometheus.NewRegistry()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) {
			c.Shards.Count = shards
			c.Registerer = reg
		}})
	cl.WaitFormed(timeout)
	fence.NewMemory(fence.MemoryConfig{Registerer: reg})
	c := cl.Node(0).C()
	cl.WaitFor("every shard owned", timeout, func() error {
		if n := len(c.Owned()); n != shards {
			return fmt.Errorf("%w: %d of %d shards owned", holdfasttest.ErrNotYet, n, shards)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := c.Acquire(ctx, "metricset")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	families := map[string]dto.MetricType{}
	cl.WaitFor("the resigned lease's hold time", timeout, func() error {
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "holdfast_") {
				families[mf.GetName()] = mf.GetType()
			}
		}
		if _, ok := families["holdfast_lease_hold_seconds"]; !ok {
			return fmt.Errorf("%w: holdfast_lease_hold_seconds not observed", holdfasttest.ErrNotYet)
		}
		return nil
	})
	return families
}
