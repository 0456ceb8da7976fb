package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// TestConfigChecks: each rule of Config (and CheckAdvertise) names the
// facade's field and says what is wrong, in the order the facade checks.
func TestConfigChecks(t *testing.T) {
	ok := Config{Voters: 3, BootstrapExpect: 3, ServerStabilization: time.Second, DeadServerStabilization: time.Second,
		ReconcileInterval: time.Second, BootstrapPromiseTTL: 4 * time.Second}
	if err := ok.CheckSize(true); err != nil {
		t.Fatalf("valid size: %v", err)
	}
	if err := ok.CheckTimings(2 * time.Second); err != nil {
		t.Fatalf("valid timings: %v", err)
	}
	for _, tc := range []struct {
		name, field, msg string
		err              error
	}{
		{"voters", "Cluster.Voters", "is 2; must be 1, 3 or 5", func() Config { c := ok; c.Voters = 2; return c }().CheckSize(true)},
		{"expect>voters", "Cluster.BootstrapExpect", "is 5, above Cluster.Voters (3): the nodes that form a cluster all become voters; " +
			"raise Cluster.Voters (1, 3 or 5) to at least 5, or lower BootstrapExpect",
			func() Config { c := ok; c.BootstrapExpect = 5; return c }().CheckSize(true)},
		{"expect<0", "Cluster.BootstrapExpect", "is -1; must be 0 (only join) or more",
			func() Config { c := ok; c.BootstrapExpect = -1; return c }().CheckSize(true)},
		{"not eligible", "Cluster.BootstrapExpect", "is 3 but DataDir is empty: only a node with a DataDir can form a cluster; " +
			"set DataDir (one node alone: DataDir, Cluster.Voters = 1 and Cluster.BootstrapExpect = 1), " +
			"or BootstrapExpect = 0 to join an existing cluster", ok.CheckSize(false)},
		{"stabilization", "Cluster.ServerStabilization", "must be positive",
			func() Config { c := ok; c.ServerStabilization = 0; return c }().CheckTimings(time.Second)},
		{"dead", "Cluster.DeadServerStabilization", "must be positive",
			func() Config { c := ok; c.DeadServerStabilization = 0; return c }().CheckTimings(time.Second)},
		{"reconcile", "Cluster.ReconcileInterval", "must be positive",
			func() Config { c := ok; c.ReconcileInterval = 0; return c }().CheckTimings(time.Second)},
		{"promise", "Cluster.BootstrapPromiseTTL", "is 4s; must be at least 2 × RPCTimeout (6s)", ok.CheckTimings(3 * time.Second)},
		{"advertise port", "AdvertiseRPCAddr", `"nohost" is not host:port: address nohost: missing port in address`,
			CheckAdvertise("AdvertiseRPCAddr", "nohost", false)},
		{"advertise unspecified", "AdvertiseRPCAddr",
			`"0.0.0.0:7" has an unspecified host, which no other node can dial: give this node's reachable address`,
			CheckAdvertise("AdvertiseRPCAddr", "0.0.0.0:7", false)},
		{"advertise name", "AdvertiseGossipAddr", `"host:7": the host must be an IP address (gossip advertises IPs)`,
			CheckAdvertise("AdvertiseGossipAddr", "host:7", true)},
	} {
		var fe *FieldError
		if !errors.As(tc.err, &fe) {
			t.Errorf("%s: got %v, want a *FieldError", tc.name, tc.err)
			continue
		}
		if field, msg := fe.ConfigField(); field != tc.field || msg != tc.msg {
			t.Errorf("%s: got %s: %q, want %s: %q", tc.name, field, msg, tc.field, tc.msg)
		}
	}
	for _, addr := range []string{"", "10.0.0.1:0", "[::1]:7946"} {
		if err := CheckAdvertise("AdvertiseGossipAddr", addr, true); err != nil {
			t.Errorf("CheckAdvertise(%q): %v", addr, err)
		}
	}
}

// TestGroupHealth: the facade's health view of the last report: unknown
// (and degraded) before any report or once it is older than
// 2 × ReconcileInterval + RPCTimeout; degraded with an unhealthy voter or
// fewer voters than wanted; the judging leader's row marked.
func TestGroupHealth(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	n := newTestNode(t, "a", net, clk, func(o *Options) { o.ReconcileInterval, o.RPCTimeout = time.Second, time.Second })
	if g := n.GroupHealth(); g.Known || g.Wanted != 3 || !g.Degraded() {
		t.Fatalf("before any report: %+v, want unknown, 3 wanted, degraded", g)
	}
	n.raft.mu.Lock()
	n.raft.leader = "addr-a" // a leader known: the judgement counts while fresh
	n.raft.mu.Unlock()
	rep := &wire.HealthReport{Leader: "id-a", FailureTolerance: 1, Voters: []wire.VoterReport{
		{ID: "id-a", Name: "a", Zone: "z1", Healthy: true}, {ID: "id-b", Name: "b", Healthy: true}, {ID: "id-c", Name: "c", Healthy: true}}}
	n.noteHealth(rep)
	clk.Advance(3 * time.Second)
	g := n.GroupHealth()
	if !g.Known || g.Degraded() || g.Age != 3*time.Second || g.FailureTolerance != 1 || len(g.Voters) != 3 {
		t.Fatalf("fresh report: %+v, want known, healthy, age 3s, 3 voters", g)
	}
	if v := g.Voters[0]; !v.Leader || v.Zone != "z1" || g.Voters[1].Leader {
		t.Errorf("voters: %+v, want only a marked leader, in zone z1", g.Voters)
	}
	clk.Advance(time.Nanosecond)
	if g := n.GroupHealth(); g.Known || !g.Degraded() {
		t.Errorf("report older than 3s: %+v, want unknown and degraded", g)
	}
	rep.Voters[2].Healthy = false
	n.noteHealth(rep)
	if g := n.GroupHealth(); !g.Known || !g.Degraded() {
		t.Errorf("unhealthy voter: %+v, want known and degraded", g)
	}
	rep.Voters = rep.Voters[:2]
	rep.Voters[1].Healthy = true
	n.noteHealth(rep)
	if g := n.GroupHealth(); !g.Degraded() {
		t.Errorf("2 of 3 wanted voters: %+v, want degraded", g)
	}
}
