package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

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
