package gometrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	compat "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

const timeout = 2 * time.Minute

// installBridge installs the go-metrics sink of Example and
// docs/METRICS.md on reg, and restores a black hole when the test ends.
func installBridge(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Name:       "myapp_go_metrics_sink",
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := compat.DefaultConfig("myapp")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	if _, err := compat.NewGlobal(cfg, sink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		off := compat.DefaultConfig("")
		off.EnableRuntimeMetrics = false
		if _, err := compat.NewGlobal(off, &compat.BlackholeSink{}); err != nil {
			t.Error(err)
		}
	})
}

// TestBridge starts a single-node cluster with the bridge installed and
// holdfast's metrics on the same registry, and checks that raft's and
// memberlist's metrics arrive, that holdfast's are all there beside them,
// and that the two sets do not share a name.
func TestBridge(t *testing.T) {
	reg := prometheus.NewRegistry()
	installBridge(t, reg)
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) { c.Registerer = reg }})
	cl.WaitFormed(timeout)

	var mfs []*dto.MetricFamily
	cl.WaitFor("raft, memberlist and holdfast metrics", timeout, func() error {
		var err error
		if mfs, err = reg.Gather(); err != nil { // a name collision would fail here
			return err
		}
		for _, prefix := range []string{"myapp_raft_", "myapp_memberlist_", "holdfast_"} {
			if len(withPrefix(mfs, prefix)) == 0 {
				return fmt.Errorf("%w: no %s* family", holdfasttest.ErrNotYet, prefix)
			}
		}
		return nil
	})

	// holdfast registered everything on the shared registry: compare with
	// a coordinator-only registry of a second cluster.
	alone := prometheus.NewRegistry()
	cl2 := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) { c.Registerer = alone }})
	cl2.WaitFormed(timeout)
	aloneMFs, err := alone.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, name := range withPrefix(mfs, "holdfast_") {
		got[name] = true
	}
	for _, name := range withPrefix(aloneMFs, "holdfast_") {
		if !got[name] && !lazy(name) {
			t.Errorf("%s is missing from the bridged registry", name)
		}
	}
	for _, mf := range mfs {
		if name := mf.GetName(); !strings.HasPrefix(name, "holdfast_") && !strings.HasPrefix(name, "myapp_") {
			t.Errorf("unexpected family %s: the bridge prefixes every name with the service name", name)
		}
	}
	t.Logf("raft: %s", strings.Join(withPrefix(mfs, "myapp_raft_"), " "))
	t.Logf("memberlist: %s", strings.Join(withPrefix(mfs, "myapp_memberlist_"), " "))
}

// lazy reports whether a holdfast metric appears only once observed (a
// vector whose label values are not set up in advance).
func lazy(name string) bool {
	switch name {
	case "holdfast_lease_acquire_wait_seconds", "holdfast_lease_hold_seconds":
		return true
	case "holdfast_node_load", "holdfast_node_capacity", "holdfast_node_load_target", "holdfast_balancer_moves_total", "holdfast_shards_unplaceable":
		// Per node and per reason: a series appears once the leader's
		// balancer has planned (or moved) for it, which a second cluster
		// may have done before the first.
		return true
	}
	return false
}

// withPrefix returns the names of the families that start with prefix.
func withPrefix(mfs []*dto.MetricFamily, prefix string) []string {
	var out []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), prefix) {
			out = append(out, mf.GetName())
		}
	}
	return out
}
