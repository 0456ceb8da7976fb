package coordinator_test

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	ln.Close() // memberlist binds it next (TCP and UDP)
	logs := &levelCapture{}
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.Cluster.BootstrapExpect = "first", 0
	cfg.GossipAddr, cfg.Join = self, []string{self}
	cfg.Logger = slog.New(logs)
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", self, err)
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
