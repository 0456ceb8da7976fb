package coordinator_test

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestNoSessionLostInLargeRebalance runs three nodes with 100,000 shards
// on the in-memory network with the whole process held to one core
// (GOMAXPROCS 1), then has a fourth node join, which moves about a
// quarter of the shards. Every node must keep the session it had: no
// session expires (holdfast_session_expiries_total stays 0 on every node
// and no node's session ID changes) while every shard ends up owned and
// the table balanced. A cluster whose shard work starves its keepalives
// turns a rebalance into a cascade of expiries. It asserts counts, not
// times, and runs alone (no t.Parallel) because it changes GOMAXPROCS.
func TestNoSessionLostInLargeRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 shards: skipped with -short")
	}
	const shards = 100_000
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	regs := make([]*prometheus.Registry, 4)
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Registerer = regs[i]
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	before := nodeSessionIDs(cl)

	joined := cl.Add()
	cl.WaitFor("the fourth node in a session", formTimeout, func() error {
		if joined.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	counts := waitBalanced(t, cl, shards, formTimeout)
	t.Logf("balanced after the join: %v", counts)

	for name, id := range before {
		if now := nodeSessionIDs(cl)[name]; now != id {
			t.Errorf("%s: session %s replaced by %q during the rebalance", name, id, now)
		}
	}
	for i, reg := range regs {
		if v := metricValue(t, reg, "holdfast_session_expiries_total", nil); v != 0 {
			t.Errorf("node%d expired %v sessions as leader during the rebalance", i, v)
		}
	}
}

// nodeSessionIDs returns each running node's current session ID by name.
func nodeSessionIDs(cl *holdfasttest.Cluster) map[string]string {
	out := map[string]string{}
	for _, n := range cl.Running() {
		out[n.Name] = n.C().SessionID()
	}
	return out
}
