package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// levelCapture keeps the level and message of every record.
type levelCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *levelCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCapture) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *levelCapture) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCapture) WithGroup(string) slog.Handler      { return h }

// withPrefix returns the records whose message starts with prefix.
func (h *levelCapture) withPrefix(prefix string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.recs {
		if strings.HasPrefix(r.Message, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// TestBootstrapWaitsQuietlyForStartingMember puts the proposer in front of
// a member that gossips its address but has no RPC handler yet, as a node
// has while New is still joining: the proposal to it fails with "no
// handler" and is retried, which is part of a normal start, so it is
// logged at debug level, not as a failure at info level.
func TestBootstrapWaitsQuietlyForStartingMember(t *testing.T) {
	t.Parallel()
	logs := &levelCapture{}
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "a"
	cfg.GossipAddr, cfg.RPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.Cluster.BootstrapExpect = 2
	cfg.Logger = slog.New(logs)
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// "b": a transport with no handler, and gossip announcing it.
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", LocalID: "id-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	m, err := membership.New(membership.Config{NodeName: "b", BindAddr: "127.0.0.1:0", Profile: membership.Local,
		Meta: membership.Meta{NodeID: "id-b", RPCAddr: tr.Addr(), Voter: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if _, err := m.Join(ctx, []string{c.GossipAddr()}); err != nil {
		t.Fatal(err)
	}

	var recs []slog.Record
	testkit.Eventually(t, "a bootstrap proposal to b", formTimeout, func() error {
		if recs = logs.withPrefix("bootstrap proposal"); len(recs) < 2 {
			return fmt.Errorf("%d records", len(recs))
		}
		return nil
	})
	for _, r := range recs {
		if r.Level >= slog.LevelInfo || !strings.Contains(r.Message, "still starting") {
			t.Errorf("%v %q: want a debug record saying a member is still starting", r.Level, r.Message)
		}
	}
	t.Logf("%d proposals deferred, first: %s", len(recs), recs[0].Message)
}

// TestDeadPeerHeartbeatErrorsLoggedOnce kills a follower: raft on the
// leader then fails a heartbeat to it several times a second for as long
// as it stays in the configuration, and logs each failure as an error. The
// leader's log must show them once per logbridge.RepeatWindow at error
// level, the rest at debug level.
func TestDeadPeerHeartbeatErrorsLoggedOnce(t *testing.T) {
	t.Parallel()
	logs := make([]*levelCapture, 3)
	for i := range logs {
		logs[i] = &levelCapture{}
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3,
		Configure: func(i int, c *coordinator.Config) { c.Logger = slog.New(logs[i]) }})
	cl.WaitFormed(formTimeout)
	leader := cl.WaitLeader(formTimeout)
	dead := (leader.Index + 1) % 3
	start := time.Now()
	cl.Kill(dead)

	const msg = "failed to heartbeat to"
	var recs []slog.Record
	testkit.Eventually(t, "ten failed heartbeats to the dead follower", formTimeout, func() error {
		if recs = logs[leader.Index].withPrefix(msg); len(recs) < 10 {
			return fmt.Errorf("%d failed heartbeats logged", len(recs))
		}
		return nil
	})
	loud := 0
	for _, r := range recs {
		if r.Level >= slog.LevelWarn {
			loud++
		}
	}
	allowed := 1 + int(time.Since(start)/logbridge.RepeatWindow)
	if loud > allowed {
		t.Errorf("%d of %d failed heartbeats logged at warning or error level, want at most %d", loud, len(recs), allowed)
	}
	t.Logf("%d failed heartbeats to the dead follower, %d at error level", len(recs), loud)
}
