package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
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
	logs := make([]*levelCapture, 3)
	for i := range logs {
		logs[i] = &levelCapture{}
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, NoStart: true,
		Configure: func(i int, c *coordinator.Config) { c.Logger = slog.New(logs[i]) }})
	first := cl.Start(0)
	// The scenario, not synchronisation: node0 waits alone longer than the
	// belief a create sent now would give.
	<-time.After(cl.Node(0).Config.SessionTTL + time.Second)
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
	l, err := first.Campaign(ctx, "after-formation")
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
