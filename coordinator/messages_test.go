package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TestErrorsNameThePackageOnce checks the messages users see of errors
// that wrap other holdfast errors: a lost lease's Checkpoint, and Ready
// after Shutdown. Each says "holdfast:" once and still matches both
// sentinels.
func TestErrorsNameThePackageOnce(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Voters: 1, InMemory: true})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, want string, is ...error) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", what, err, want)
			return
		}
		if n := strings.Count(err.Error(), "holdfast:"); n != 1 {
			t.Errorf("%s: %q names the package %d times", what, err, n)
		}
		for _, target := range is {
			if !errors.Is(err, target) {
				t.Errorf("%s: %q does not match %q", what, err, target)
			}
		}
	}
	// Released by this node, not lost.
	check("Checkpoint after Release", l.Checkpoint(), "holdfast: lease released by this node", coordinator.ErrReleased)
	if errors.Is(l.Checkpoint(), coordinator.ErrLeaseLost) {
		t.Errorf("Checkpoint after this node's own Release matches ErrLeaseLost: %v", l.Checkpoint())
	}

	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	check("Ready after Shutdown", c.Ready(), "holdfast: not ready: coordinator is shut down",
		coordinator.ErrNotReady, coordinator.ErrShutdown)
}

// TestJoinMistakesWarnWithHint starts a node whose join address is a
// mistake: another node's RPC port, or a port nothing listens on. Each
// failure must be logged as a warning on one line with a hint naming the
// likely mistake, and repeated (with backoff) while the node stays alone.
func TestJoinMistakesWarnWithHint(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(formTimeout)
	tlsCl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, TLS: true})
	dead := deadAddr(t)

	for _, tc := range []struct {
		name, join, hint string
	}{
		{"rpc port", cl.Node(0).C().RPCAddr(), "not a gossip port: wrong port?"},
		{"tls rpc port", tlsCl.Node(0).C().RPCAddr(), "not a gossip port: wrong port?"},
		{"nothing listening", dead, "nothing listening at the join address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &levelCapture{}
			cfg := coordinator.DefaultLocalConfig()
			cfg.NodeName, cfg.Cluster.BootstrapExpect = "lost", 0
			cfg.Join = []string{tc.join}
			cfg.Logger = slog.New(logs)
			c, err := coordinator.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const msg = "cannot join the gossip pool"
			var recs []slog.Record
			testkit.Eventually(t, "two join failures reported", formTimeout, func() error {
				if recs = logs.withPrefix(msg); len(recs) < 2 {
					return fmt.Errorf("%d reported", len(recs))
				}
				return nil
			})
			for _, r := range recs {
				a := strings.Join(attrs(r), " ")
				if r.Level != slog.LevelWarn || !strings.Contains(a, "hint=") || !strings.Contains(a, tc.hint) || strings.Contains(a, "\n") ||
					strings.Contains(a, "error occurred") {
					t.Errorf("%v %q %s: want a one-line warning with the hint %q", r.Level, r.Message, a, tc.hint)
				}
			}
			t.Logf("%s %s", recs[0].Message, strings.Join(attrs(recs[0]), " "))
		})
	}
}

// deadAddr returns a loopback TCP address where nothing listens, and that
// stays so until the test ends: a socket bound to it but never listening
// keeps the port out of every other bind (a port merely closed again could
// be handed to a node of a test running in parallel), and a connection to
// it is refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}

// TestJoinOnlySelfIsInfo joins a node to its own gossip address, as the
// first pod of a StatefulSet does while the headless Service lists only
// it: a normal start, reported at info level, not as a warning.
func TestJoinOnlySelfIsInfo(t *testing.T) {
	t.Parallel()
	self := fmt.Sprintf("127.0.0.1:%d", holdfasttest.ReservePort(t)) // free for memberlist's TCP and UDP
	logs := &levelCapture{}
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.Cluster.BootstrapExpect = "first", 0
	cfg.GossipAddr, cfg.Join = self, []string{self}
	cfg.Logger = slog.New(logs)
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs := logs.withPrefix("join: the seeds name only this node")
	if len(recs) == 0 || recs[0].Level != slog.LevelInfo {
		t.Errorf("%d records; want an info record saying the seeds name only this node", len(recs))
	}
	if warns := logs.withPrefix("cannot join"); len(warns) > 0 {
		t.Errorf("a join to this node only was logged as a warning: %s", warns[0].Message)
	}
}

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
