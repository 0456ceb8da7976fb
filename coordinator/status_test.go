package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// holds reports whether c's replica shows name held.
func holds(c *coordinator.Coordinator, name string) bool {
	for _, l := range c.Leases() {
		if l.Name == name {
			return true
		}
	}
	return false
}

// TestSync checks that Sync on a follower returns only once its replica
// shows a write the leader committed before the call: at once on a
// healthy follower, never while the follower is cut off (it fails when
// its context ends, and reports since when it has known no leader), and
// after the partition heals.
func TestSync(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	f := cl.Node((leader.Index + 1) % 3)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	// TryAcquire does not wait for a session, and a cluster formed a moment
	// ago may not have opened the leader's yet.
	if err := leader.C().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := leader.C().TryAcquire(ctx, "before-sync"); err != nil {
		t.Fatal(err)
	}
	if err := f.C().Sync(ctx); err != nil {
		t.Fatalf("Sync on a healthy follower: %v", err)
	}
	if !holds(f.C(), "before-sync") {
		t.Fatalf("after Sync, %s's replica does not show a lease committed before it", f.Name)
	}

	cl.Isolate(f.Index)
	if _, err := leader.C().TryAcquire(ctx, "while-cut-off"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	err := f.C().Sync(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync on a cut-off follower: %v, want it to wait until its context ends", err)
	}
	cl.WaitFor(f.Name+" to know no leader", formTimeout, func() error {
		if since, ok := f.C().NoLeaderSince(); !ok || since.IsZero() {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	t.Logf("cut-off follower's Sync: %v", err)

	cl.Heal()
	if err := f.C().Sync(ctx); err != nil {
		t.Fatalf("Sync after the partition healed: %v", err)
	}
	if !holds(f.C(), "while-cut-off") {
		t.Fatalf("after Sync, %s's replica does not show the lease committed while it was cut off", f.Name)
	}
	if _, ok := f.C().NoLeaderSince(); ok {
		t.Errorf("%s knows no leader after a successful Sync", f.Name)
	}
}

// TestSyncOnCutOffLeader cuts the leader off: while it still believes it
// leads, and after, its Sync must not return, since the majority may have
// committed writes it has not seen.
func TestSyncOnCutOffLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	old := cl.WaitFormed(formTimeout)
	cl.Isolate(old.Index)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := old.C().Sync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync on a cut-off leader: %v, want it to wait until its context ends", err)
	}
}

// TestGroupHealthWithoutLeader kills two of three voters: the survivor's
// group verdict turns unknown ("no raft leader known") as soon as it knows
// no leader, rather than showing the last "3 of 3 voters healthy, fault
// tolerance 1" until the judgement ages out.
func TestGroupHealthWithoutLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	cl.WaitFor("node0 to hold a healthy verdict", formTimeout, func() error {
		if g := c.Health(); !g.Known || g.Degraded() || g.FailureTolerance != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	cl.Kill(1)
	cl.Kill(2)
	cl.WaitFor("node0 to know no leader", formTimeout, func() error {
		if _, ok := c.NoLeaderSince(); !ok {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	g := c.Health()
	if g.Known || g.Unknown != "no raft leader known" || !g.Degraded() {
		t.Fatalf("with no leader known, Health is %+v; want unknown at once (no raft leader known)", g)
	}
}

// TestFirstSessionNotExpiredAtFormation starts one of three expected nodes
// and lets it wait alone for longer than a session TTL before the others
// come: its first session, created while no leader exists, must count its
// belief from the attempt that committed, so it is opened once and does
// not end at once with a false "session ended" warning.
func TestFirstSessionNotExpiredAtFormation(t *testing.T) {
	t.Parallel()
	logs := make([]*levelCapture, 3)
	for i := range logs {
		logs[i] = &levelCapture{}
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, NoStart: true,
		Configure: func(i int, c *coordinator.Config) { c.Logger = slog.New(logs[i]) }})
	first := cl.Start(0)
	// The scenario, not synchronisation: node0 waits alone longer than the
	// belief a create sent now would give.
	<-time.After(cl.Node(0).Config.Session.TTL + time.Second)
	cl.Start(1)
	cl.Start(2)
	cl.WaitFormed(formTimeout)
	cl.WaitFor("node0 in a session", formTimeout, func() error {
		if first.SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	// A lease granted and checked: a round trip through the leader after
	// the session opened, by which time a false expiry has long been logged.
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := first.Acquire(ctx, "after-formation")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Checkpoint(); err != nil {
		t.Errorf("checkpoint of a fresh lease: %v", err)
	}
	for i, lg := range logs {
		if ended := lg.withPrefix("session ended"); len(ended) > 0 {
			t.Errorf("node%d: %d false session expiries at formation, first: %s %v", i, len(ended), ended[0].Message, attrs(ended[0]))
		}
	}
	if opened := logs[0].withPrefix("session opened"); len(opened) != 1 {
		t.Errorf("node0 opened %d sessions, want 1", len(opened))
	}
}

// attrs lists a record's attributes as key=value strings.
func attrs(r slog.Record) []string {
	var out []string
	r.Attrs(func(a slog.Attr) bool {
		out = append(out, fmt.Sprintf("%s=%v", a.Key, a.Value))
		return true
	})
	return out
}

// TestFormationProgress starts two of three expected nodes: each reports
// and logs "bootstrap: 2 of 3 eligible nodes seen (node0, node1)", Ready
// says so, and once the third starts every node reports the cluster.
func TestFormationProgress(t *testing.T) {
	t.Parallel()
	logs := make([]*levelCapture, 3)
	for i := range logs {
		logs[i] = &levelCapture{}
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, NoStart: true,
		Configure: func(i int, c *coordinator.Config) { c.Logger = slog.New(logs[i]) }})
	cl.Start(0)
	cl.Start(1)
	const want = "bootstrap: 2 of 3 eligible nodes seen (node0, node1)"
	for i := range 2 {
		c := cl.Node(i).C()
		cl.WaitFor("formation progress on "+c.NodeName(), formTimeout, func() error {
			if f := c.Formation(); f.Progress != want || f.Formed || f.Expect != 3 || len(f.Seen) != 2 {
				return fmt.Errorf("%w: %+v", holdfasttest.ErrNotYet, f)
			}
			return nil
		})
		cl.WaitFor("the progress logged by "+c.NodeName(), formTimeout, func() error {
			for _, r := range logs[i].withPrefix(want) {
				if r.Level == slog.LevelInfo {
					return nil
				}
			}
			return holdfasttest.ErrNotYet
		})
		if err := c.Ready(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Ready() = %v, want the progress in it", c.NodeName(), err)
		}
	}
	cl.Start(2)
	cl.WaitFormed(formTimeout)
	for _, n := range cl.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		err := n.C().WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: WaitReady: %v", n.Name, err)
		}
		if f := n.C().Formation(); !f.Formed || f.Progress != "member of cluster "+n.C().ClusterID() {
			t.Errorf("%s: formed, but Formation says %+v", n.Name, f)
		}
	}
}

const formTimeout = 60 * time.Second

// checkOneCluster asserts that every running node reports the same cluster
// ID, sees every running member, and that exactly one node leads.
func checkOneCluster(t *testing.T, cl *holdfasttest.Cluster) {
	t.Helper()
	leader := cl.WaitFormed(formTimeout)
	id := leader.C().ClusterID()
	for _, n := range cl.Running() {
		if n.C().ClusterID() != id {
			t.Fatalf("%s in cluster %s, leader %s in %s", n.Name, n.C().ClusterID(), leader.Name, id)
		}
		if got := len(n.C().Members()); got < len(cl.Running()) {
			t.Fatalf("%s sees %d members, want %d", n.Name, got, len(cl.Running()))
		}
	}
	// One leader every node agrees on, polled: a loaded machine may have
	// moved leadership since WaitFormed (it once saw "0 leaders" at this
	// point, the old leader stepped down and no successor elected yet).
	cl.WaitLeader(formTimeout)
}

func TestFormsOneCluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes    int
		inMemory bool
	}{{3, false}, {5, false}, {3, true}} {
		t.Run(fmt.Sprintf("nodes=%d/inmem=%v", tc.nodes, tc.inMemory), func(t *testing.T) {
			cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: tc.nodes, Voters: tc.nodes, InMemory: tc.inMemory})
			checkOneCluster(t, cl)
			cl.WaitFor("every node a voter", formTimeout, func() error {
				v, nv, err := cl.Suffrages()
				if err != nil {
					return err
				}
				if v != tc.nodes || nv != 0 {
					return fmt.Errorf("%w: %d voters, %d non-voters", holdfasttest.ErrNotYet, v, nv)
				}
				return nil
			})
		})
	}
}
