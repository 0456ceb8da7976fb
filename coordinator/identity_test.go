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
	"github.com/holdfast-go/holdfast/transport"
)

// startOn starts (and closes) a coordinator named name on dataDir, on
// loopback ports, joining nobody; it returns New's error.
func startOn(t *testing.T, name, dataDir string, allowRename bool) error {
	t.Helper()
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = name
	cfg.GossipAddr, cfg.RPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = dataDir
	cfg.AllowRename = allowRename
	c, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	return nil
}

// TestDataDirRefusedUnderAnotherName checks that a data dir last used by
// one node name is refused under another (the error names the field to
// set and both names), accepted with AllowRename (after which the new name
// is the recorded one), and that a data dir from before names were
// recorded adopts the first name it starts under.
func TestDataDirRefusedUnderAnotherName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatal(err)
	}
	id, err := os.ReadFile(filepath.Join(dir, "node-id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatalf("same name again: %v", err)
	}
	err = startOn(t, "n2", dir, false)
	if !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Fatalf("another name: %v, want an error wrapping ErrInvalidConfig", err)
	}
	for _, want := range []string{"AllowRename", `"n1"`, `"n2"`, dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	t.Logf("refused: %v", err)

	if err := startOn(t, "n2", dir, true); err != nil {
		t.Fatalf("AllowRename: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "node-id")); string(after) != string(id) {
		t.Errorf("identity changed on rename: %q, was %q", after, id)
	}
	if err := startOn(t, "n1", dir, false); !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Errorf("old name after the rename: %v, want it refused", err)
	}

	// A data dir written before names were recorded has only node-id.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "node-id"), id, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "x1", old, false); err != nil {
		t.Fatalf("data dir without a recorded name: %v", err)
	}
	if err := startOn(t, "y1", old, false); !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Errorf("after adopting x1, y1: %v, want it refused", err)
	}
}

// TestDataDirInUseUnderTheSameName: while a node runs on a data dir, a second New on
// it fails at once with an error naming the dir (the dir is locked), and
// the first node keeps running; once it has closed, the dir starts again.
func TestDataDirInUseUnderTheSameName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.DataDir = "n1", dir
	first, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = startOn(t, "n1", dir, false)
	if err == nil || !strings.Contains(err.Error(), "another node") || !strings.Contains(err.Error(), dir) {
		t.Errorf("second node on a data dir in use: %v, want an error naming another node and %s", err, dir)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatalf("the data dir after the first node closed: %v", err)
	}
}

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
	// A's leader at the time: a loaded machine can move A's leadership
	// between the formation and this call.
	a.WaitFor("A's leader to add B's node to its configuration", formTimeout, func() error {
		return a.WaitLeader(formTimeout).C().ForceAddNonvoter(nb.ID(), nb.RPCAddr())
	})
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

// confirmProbe is the body of a confirmation request (raft.confirm): the
// leader's term and the raft server ID of the voter it means.
type confirmProbe struct {
	Term uint64 `msgpack:"term"`
	ID   string `msgpack:"id"`
}

type confirmAnswer struct {
	OK bool `msgpack:"ok"`
}

// TestConfirmationAnsweredOnlyForOwnIdentity: the confirmation round asks
// a voter, by its raft server ID, whether it is still in the leader's
// term; whatever node answers at that voter's address must say no when it
// is not that voter (a wiped node back at the same address, another node
// that took the address over). A follower says yes for its own ID and the
// current term, and no for the same term asked of another ID.
func TestConfirmationAnsweredOnlyForOwnIdentity(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	f := follower(cl, leader)
	probe, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	ask := func(term uint64, id string) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var rep confirmAnswer
		err := probe.Call(ctx, f.C().RPCAddr(), "raft.confirm", confirmProbe{Term: term, ID: id}, &rep)
		return rep.OK, err
	}
	// Find the current term: the one the follower confirms for itself.
	var term uint64
	cl.WaitFor("the follower confirms the current term for its own ID", formTimeout, func() error {
		for tm := uint64(1); tm < 64; tm++ {
			ok, err := ask(tm, f.C().ID())
			if err != nil {
				return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, err)
			}
			if ok {
				term = tm
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	ok, err := ask(term, "another-identity")
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("%s confirmed term %d for a voter with another raft ID", f.Name, term)
	}
	if ok, err := ask(term, f.C().ID()); err != nil || !ok {
		t.Fatalf("%s no longer confirms term %d for itself: %v %v", f.Name, term, ok, err)
	}
}
