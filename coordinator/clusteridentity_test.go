package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// oneNodeCluster starts a one-node cluster (Voters 1) whose node's logs
// are captured.
func oneNodeCluster(t *testing.T, name string) (*holdfasttest.Cluster, *logCapture) {
	var capture *logCapture
	b := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) {
		c.NodeName = name
		capture = newLogCapture(c.Logger.Handler())
		c.Logger = slog.New(capture)
	}})
	b.WaitFormed(formTimeout)
	return b, capture
}

// writeSome acquires and releases a lease on c n times and returns the
// last token.
func writeSome(t *testing.T, c *coordinator.Coordinator, name string, n int) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	var last uint64
	for range n {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d after %d", l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// TestRestartedNodeOfAnotherClusterRefused: a one-node cluster B formed,
// stopped and restarted with Join pointing at a running cluster A is
// refused by New with ErrForeignCluster naming both clusters and
// Cluster.LeaveCluster, and A's configuration never lists it. Restarted
// with LeaveCluster set to B, it moves its raft state aside and joins A as
// a new node.
func TestRestartedNodeOfAnotherClusterRefused(t *testing.T) {
	t.Parallel()
	a := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	la := a.WaitFormed(formTimeout)
	idA := la.C().ClusterID()
	b, _ := oneNodeCluster(t, "m1")
	nb := b.Node(0)
	idB, oldID := nb.C().ClusterID(), nb.C().ID()
	writeSome(t, nb.C(), "b-lease", 3)
	b.Kill(0)

	cfg := nb.Config
	cfg.Join = []string{la.C().GossipAddr()}
	c, err := coordinator.New(cfg)
	if err == nil {
		c.Close()
		t.Fatal("a node whose data dir belongs to cluster B started with cluster A's seeds")
	}
	for _, want := range []string{idA, idB, "Config.Cluster.LeaveCluster"} {
		if !errors.Is(err, coordinator.ErrForeignCluster) || !strings.Contains(err.Error(), want) {
			t.Fatalf("New: %v; want ErrForeignCluster naming %q", err, want)
		}
	}
	for _, n := range a.Running() {
		if servers := n.C().RaftServers(); slices.Contains(servers, oldID) {
			t.Fatalf("%s's configuration lists B's node: %v", n.Name, servers)
		}
	}

	cfg.Cluster.LeaveCluster = idB
	c, err = coordinator.New(cfg)
	if err != nil {
		t.Fatalf("New with LeaveCluster: %v", err)
	}
	defer c.Close()
	if c.ID() == oldID {
		t.Fatal("the node kept its identity in cluster B")
	}
	left, _ := filepath.Glob(filepath.Join(cfg.DataDir, "left-"+idB+"-*", "raft"))
	if len(left) != 1 {
		t.Fatalf("B's raft state not moved aside: %v", left)
	}
	a.WaitFor("the node that left B in A's configuration", formTimeout, func() error {
		l := a.WaitLeader(formTimeout)
		if !slices.Contains(l.C().RaftServers(), c.ID()) || c.ClusterID() != idA {
			return fmt.Errorf("%w: A's servers %v, the node's cluster %q", holdfasttest.ErrNotYet, l.C().RaftServers(), c.ClusterID())
		}
		return nil
	})
	writeSome(t, la.C(), "a-lease", 2)
}

// TestForeignLeaderCannotCaptureNode: a leader of cluster A that adds a
// node of cluster B to its configuration anyway (as a leader of an earlier
// release did for a node gossiping no cluster ID) gets none of its raft
// traffic through: the node keeps leading B, its cluster and its replica
// stay B's, and both clusters keep serving.
func TestForeignLeaderCannotCaptureNode(t *testing.T) {
	t.Parallel()
	a := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	la := a.WaitFormed(formTimeout)
	writeSome(t, la.C(), "a-lease", 5)
	b, capture := oneNodeCluster(t, "m1")
	nb := b.Node(0).C()
	idB, baseB := nb.ClusterID(), nb.TokenBase()
	before := writeSome(t, nb, "b-lease", 2)
	if err := la.C().ForceAddNonvoter(nb.ID(), nb.RPCAddr()); err != nil {
		t.Fatalf("adding B's node to A: %v", err)
	}
	b.WaitFor("B's node to refuse A's leader", formTimeout, func() error {
		if !capture.contains("refusing raft traffic from a server of another cluster") {
			return fmt.Errorf("%w: no refusal logged", holdfasttest.ErrNotYet)
		}
		return nil
	})
	// A's leader keeps trying; give it a while and check nothing got in.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		l, ok := nb.RaftLeader()
		if !ok || l.ID != nb.ID() || nb.ClusterID() != idB || slices.Contains(nb.RaftServers(), la.C().ID()) {
			t.Fatalf("B's node follows %+v (ok %v), cluster %s, servers %v", l, ok, nb.ClusterID(), nb.RaftServers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after := writeSome(t, nb, "b-lease", 2); after <= before || nb.TokenBase() != baseB || nb.ClusterID() != idB {
		t.Fatalf("B's tokens went from %d to %d, base %d to %d, cluster %s: B's state is not its own",
			before, after, baseB, nb.TokenBase(), nb.ClusterID())
	}
	writeSome(t, la.C(), "a-lease", 2)
}

// TestTokenFloor: a cluster created with Cluster.TokenFloor issues its
// first token above the floor, and its token base is the floor when it is
// above the clock; one created without is above the clock in µs.
func TestTokenFloor(t *testing.T) {
	t.Parallel()
	const floor = 1 << 55 // above today's clock in µs (about 2^50.6)
	start := time.Now()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) {
		c.Cluster.TokenFloor = floor
	}})
	c := cl.WaitFormed(formTimeout).C()
	if c.TokenBase() != floor {
		t.Fatalf("token base %d, want %d", c.TokenBase(), uint64(floor))
	}
	if tok := writeSome(t, c, "l", 1); tok <= floor {
		t.Fatalf("first token %d not above the floor %d", tok, uint64(floor))
	}
	plain := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	p := plain.WaitFormed(formTimeout).C()
	created, ok := p.ClusterCreated()
	if base := p.TokenBase(); !ok || base < uint64(start.UnixMicro()) || created.Before(start.Add(-time.Second)) {
		t.Fatalf("token base %d, created %v (ok %v); started at %d µs", base, created, ok, start.UnixMicro())
	}
	if tok := writeSome(t, p, "l", 1); tok <= uint64(start.UnixMicro()) {
		t.Fatalf("first token %d not above the clock at start %d", tok, start.UnixMicro())
	}
	if _, err := os.Stat(filepath.Join(plain.Node(0).DataDir, "cluster.json")); err != nil {
		t.Fatalf("the data dir records no cluster: %v", err)
	}
}
