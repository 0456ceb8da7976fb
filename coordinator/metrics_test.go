package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// metricValue returns the value of the series name{labels} in reg (0 when
// absent), summing counters, gauges and histogram counts.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			case m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// waitMetric polls until cond holds for the metric's value, summed over
// regs (one registry, or every node's for a metric only the raft leader
// moves: leadership may change during a test).
func waitMetric(t *testing.T, cl *holdfasttest.Cluster, regs []*prometheus.Registry, name string, labels map[string]string,
	what string, cond func(float64) bool) {
	t.Helper()
	cl.WaitFor(fmt.Sprintf("%s%v %s", name, labels, what), formTimeout, func() error {
		v := 0.0
		for _, reg := range regs {
			v += metricValue(t, reg, name, labels)
		}
		if !cond(v) {
			return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, v)
		}
		return nil
	})
}

// TestMetricsScenario runs a 3-node cluster with one registry per node
// (three coordinators in one process: no collision) and checks that the
// metrics move as the events they count happen, and that promlint finds
// nothing to report on the whole set.
func TestMetricsScenario(t *testing.T) {
	t.Parallel()
	const shards = 16
	regs := make([]*prometheus.Registry, 3)
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Registerer = regs[i]
	}})
	leader := cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	checkFormedMetrics(t, cl, regs, shards)

	// Acquire and release a leader lease on a follower.
	i := (leader.Index + 1) % 3
	c, reg := cl.Node(i).C(), regs[i]
	one := []*prometheus.Registry{reg}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	leaderKind := map[string]string{"kind": "leader"}
	if v := metricValue(t, reg, "holdfast_leases_held", leaderKind); v != 1 {
		t.Errorf("leases held after Acquire: %v, want 1", v)
	}
	if v := metricValue(t, reg, "holdfast_lease_acquire_wait_seconds", leaderKind); v != 1 {
		t.Errorf("acquire wait observations: %v, want 1", v)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, cl, one, "holdfast_leases_held", leaderKind, "back to 0", func(v float64) bool { return v == 0 })
	waitMetric(t, cl, one, "holdfast_leases_lost_total", map[string]string{"kind": "leader", "reason": "resigned"},
		"counts the release", func(v float64) bool { return v == 1 })

	// A forced expiry: pause a follower holding a lease and shards.
	if _, err := c.Acquire(ctx, "metrics"); err != nil {
		t.Fatal(err)
	}
	cl.Pause(i)
	waitMetric(t, cl, regs, "holdfast_session_expiries_total", nil, ">= 1", func(v float64) bool { return v >= 1 })
	waitMetric(t, cl, one, "holdfast_leases_lost_total", map[string]string{"kind": "leader", "reason": "expired"},
		"counts the expiry", func(v float64) bool { return v == 1 })
	waitMetric(t, cl, one, "holdfast_leases_lost_total", map[string]string{"kind": "shard", "reason": "expired"},
		"counts the shards lost", func(v float64) bool { return v >= 1 })
	cl.Resume(i)
	waitMetric(t, cl, regs, "holdfast_shards_unowned_seconds_total", nil, "> 0", func(v float64) bool { return v > 0 })

	checkDrainMetrics(ctx, t, cl, regs, i, shards)
	checkFenceMetric(t, reg)
	lintRegistry(t, reg)
}

// checkFormedMetrics checks a formed, balanced cluster's gauges: the
// shards owned sum to shards, every node counts 3 voters and 3 live
// members, and exactly one node reports itself leader.
func checkFormedMetrics(t *testing.T, cl *holdfasttest.Cluster, regs []*prometheus.Registry, shards int) {
	t.Helper()
	owned := 0.0
	for i := range regs {
		owned += metricValue(t, regs[i], "holdfast_shards_owned", nil)
		if v := metricValue(t, regs[i], "holdfast_raft_voters", nil); v != 3 {
			t.Errorf("node%d: raft voters %v", i, v)
		}
		if v := metricValue(t, regs[i], "holdfast_members", map[string]string{"state": "alive"}); v != 3 {
			t.Errorf("node%d: alive members %v", i, v)
		}
	}
	if owned != float64(shards) {
		t.Errorf("holdfast_shards_owned sums to %v across nodes, want %d", owned, shards)
	}
	// Exactly one node reports itself leader (leadership may move under
	// load between WaitFormed and this read).
	waitMetric(t, cl, regs, "holdfast_raft_state", map[string]string{"state": "leader"}, "on one node",
		func(v float64) bool { return v == 1 })
}

// checkDrainMetrics drains node i once it owns shards again and checks the
// handoff counters and that the drained node reports no shard owned.
func checkDrainMetrics(ctx context.Context, t *testing.T, cl *holdfasttest.Cluster, regs []*prometheus.Registry, i, shards int) {
	t.Helper()
	reg := regs[i]
	one := []*prometheus.Registry{reg}
	waitBalanced(t, cl, shards, formTimeout)
	if err := cl.Node(i).C().Drain(ctx); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, cl, one, "holdfast_leases_lost_total", map[string]string{"kind": "shard", "reason": "revoked"},
		"counts the handoffs", func(v float64) bool { return v >= 1 })
	waitMetric(t, cl, regs, "holdfast_shard_handoffs_total", nil, ">= 1", func(v float64) bool { return v >= 1 })
	waitMetric(t, cl, regs, "holdfast_shard_handoff_duration_seconds", nil, "observed", func(v float64) bool { return v >= 1 })
	if v := metricValue(t, reg, "holdfast_shards_owned", nil); v != 0 {
		t.Errorf("a drained node reports %v shards owned", v)
	}
}

// checkFenceMetric checks that a fence rejection is counted on the
// registry the fence was given.
func checkFenceMetric(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	mem := fence.NewMemory(fence.MemoryConfig{Registerer: reg})
	if err := mem.Check("r", 5); err != nil {
		t.Fatal(err)
	}
	if err := mem.Check("r", 4); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("stale token: %v", err)
	}
	if v := metricValue(t, reg, "holdfast_fence_rejections_total", nil); v != 1 {
		t.Errorf("fence rejections %v, want 1", v)
	}
}

// lintRegistry runs promlint over everything gathered from reg.
func lintRegistry(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	names := make([]string, 0, len(mfs))
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	t.Logf("%d metric families linted: %s", len(mfs), strings.Join(names, " "))
}

// TestMetricsSharedAndNilRegisterer: two coordinators registering on one
// registry do not panic (the second one's duplicates are refused and
// logged), and a nil registerer works.
func TestMetricsSharedAndNilRegisterer(t *testing.T) {
	t.Parallel()
	shared := prometheus.NewRegistry()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		if i < 2 {
			c.Registerer = shared
		}
	}})
	cl.WaitFormed(formTimeout)
	if n, err := testutil.GatherAndCount(shared, "holdfast_raft_term"); err != nil || n != 1 {
		t.Fatalf("shared registry: %d series of holdfast_raft_term, %v", n, err)
	}
}

// scrapingRegisterer collects every collector the moment it is registered:
// the earliest a scrape could read it. A panic while collecting (a
// collector reading a part that does not exist yet) is recorded.
type scrapingRegisterer struct {
	*prometheus.Registry
	mu     sync.Mutex
	panics []string
}

func (r *scrapingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			r.mu.Lock()
			r.panics = append(r.panics, fmt.Sprint(p))
			r.mu.Unlock()
		}
	}()
	ch := make(chan prometheus.Metric, 1024) // more than any collector of ours yields
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil { // a GaugeFunc reads its value here
			return err
		}
	}
	return nil
}

func (r *scrapingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// TestMetricsScrapedDuringNew: a scrape that comes while New is still
// building the node (right as each collector is registered) reads every
// collector without meeting a part that does not exist yet.
func TestMetricsScrapedDuringNew(t *testing.T) {
	t.Parallel()
	reg := &scrapingRegisterer{Registry: prometheus.NewRegistry()}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) {
			c.Shards.Count = 4
			c.Registerer = reg
		}})
	cl.WaitFormed(formTimeout)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, p := range reg.panics {
		t.Errorf("collecting a collector as it was registered panicked: %s", p)
	}
	if n, err := reg.Gather(); err != nil || len(n) == 0 {
		t.Fatalf("gathered %d families, %v", len(n), err)
	}
}
