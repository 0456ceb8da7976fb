package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestTokensSurviveSnapshotsAndRestarts takes tokens, snapshots and
// compacts the log, restarts every node from its data dir, lets a node
// without a data dir catch up by snapshot, and checks that tokens keep
// increasing and the replicas agree (invariants I2, I5 in docs/ARCHITECTURE.md).
func TestTokensSurviveSnapshotsAndRestarts(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(_ int, c *coordinator.Config) {
		c.Raft.SnapshotThreshold, c.Raft.TrailingLogs = 8, 2
	}})
	cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	var last uint64
	take := func(c *coordinator.Coordinator) {
		t.Helper()
		l, err := c.Acquire(ctx, "tok")
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
	for i := 0; i < 10; i++ {
		take(cl.Node(i % 3).C())
	}
	snapshotAll(t, cl)
	for _, n := range cl.Nodes() {
		cl.Kill(n.Index)
	}
	for _, n := range cl.Nodes() {
		cl.Start(n.Index)
	}
	cl.WaitFormed(formTimeout)
	for i := 0; i < 5; i++ {
		take(cl.Node(i % 3).C())
	}
	// A node without a data dir must catch up from a snapshot: the log
	// before it was compacted away. This one asks to be a raft non-voter,
	// so raft installs the snapshot; the fed replica below gets the feed's.
	snapshotAll(t, cl)
	extra := cl.AddNoStart()
	extra.Config.DataDir, extra.Config.Cluster.BootstrapExpect = "", 0
	extra.Config.Cluster.ReplicaFeed = false
	extra.DataDir = ""
	cl.Start(extra.Index)
	cl.WaitFor("the new node caught up", formTimeout, cl.CaughtUp)
	// The replica shows the snapshot's index as soon as the state machine
	// restored it; raft records the snapshot in its stats only after that
	// restore returns, so the stat is waited for, not read once.
	cl.WaitFor("the new node to record an installed snapshot", formTimeout, func() error {
		if s := extra.C().LastSnapshotIndex(); s == "0" || s == "" {
			return fmt.Errorf("%w: last_snapshot_index %q", holdfasttest.ErrNotYet, s)
		}
		return nil
	})
	take(extra.C())
	fed := cl.AddNoStart()
	fed.Config.DataDir, fed.Config.Cluster.BootstrapExpect = "", 0
	fed.DataDir = ""
	cl.Start(fed.Index)
	cl.WaitFor("the fed replica caught up", formTimeout, cl.CaughtUp)
	if s := fed.C().LastSnapshotIndex(); s != "0" && s != "" {
		t.Errorf("the fed replica reports raft snapshot %s: it should be outside raft", s)
	}
	take(fed.C())
	cl.WaitFor("replicas agree on the last token", formTimeout, func() error {
		for _, n := range cl.Running() {
			if got := n.C().LastToken(); got != last {
				return fmt.Errorf("%w: %s at token %d, want %d", holdfasttest.ErrNotYet, n.Name, got, last)
			}
		}
		return nil
	})
}

// snapshotAll has every running node of cl take a snapshot, which compacts
// its log down to the configured trailing logs.
func snapshotAll(t *testing.T, cl *holdfasttest.Cluster) {
	t.Helper()
	for _, n := range cl.Running() {
		if err := n.C().Snapshot(); err != nil {
			t.Fatalf("snapshot on %s: %v", n.Name, err)
		}
	}
}
