package coordinator_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShutdownWithoutQuorum kills two of three voters and at once shuts
// the third down: its shard handoff and session close cannot commit, so
// they are skipped, one log line each, once no raft leader has been known
// for Config.ShutdownWithoutLeader (or at once, if gossip already shows
// the two dead), and Shutdown returns nil. It used to wait 2 × TTL + drain
// for the handoff and then the session's close, and return (and log, in
// one line with a literal newline) two context deadline errors.
func TestShutdownWithoutQuorum(t *testing.T) {
	t.Parallel()
	logs := &levelCapture{}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		if i == 0 {
			c.Logger = slog.New(logs)
			c.ShutdownWithoutLeader = time.Second
		}
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	cl.WaitFor("node0 to own a shard", formTimeout, func() error {
		if len(c.Owned()) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	cl.Kill(1)
	cl.Kill(2)
	if err := cl.Stop(context.Background(), 0); err != nil {
		t.Fatalf("Shutdown without a quorum: %v, want nil (the steps that cannot commit are skipped)", err)
	}
	for _, step := range []string{"handing shards off", "closing the session"} {
		recs := logs.withPrefix("shutdown: skipped " + step + ": ")
		if len(recs) != 1 {
			t.Errorf("%d lines for skipping %s, want 1", len(recs), step)
			continue
		}
		msg := recs[0].Message
		if !strings.HasSuffix(msg, ": no raft leader known for 1s (Config.ShutdownWithoutLeader)") &&
			!strings.HasSuffix(msg, ": gossip shows no quorum of voters alive") {
			t.Errorf("skip line %q: want the reason", msg)
		}
		t.Log(msg)
	}
	for _, r := range logs.withPrefix("") {
		if strings.Contains(r.Message, "\n") || (r.Level >= slog.LevelWarn && strings.HasPrefix(r.Message, "shutdown:")) {
			t.Errorf("shutdown logged %v %q", r.Level, r.Message)
		}
	}
}
