// Where a node keeps its gossip keyring: in its data dir across restarts
// (and which keyring wins at start), or in memory without a data dir.

package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestGossipKeyringSurvivesRestarts rotates the gossip key of a TLS
// cluster, then restarts every node one by one (a crash each time: no
// graceful leave) with its Config.Gossip.Keys unchanged, still the old key.
// Each node comes back with the rotated keyring from its data dir and the
// cluster stays whole; with the keyring in memory only, the first node
// restarted would come back with the removed key and never rejoin.
func TestGossipKeyringSurvivesRestarts(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossipKey(1), gossipKey(2)
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true,
		Configure: func(i int, c *coordinator.Config) { c.Gossip.Keys = [][]byte{oldKey} }})
	leader := cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for _, step := range []struct {
		name string
		f    func(context.Context, []byte) error
		key  []byte
	}{
		{"install", leader.C().InstallGossipKey, newKey},
		{"use", leader.C().UseGossipKey, newKey},
		{"remove", leader.C().RemoveGossipKey, oldKey},
	} {
		if err := step.f(ctx, step.key); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if err := keyringIs(cl.Running(), newKey); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes() {
		st, err := os.Stat(filepath.Join(n.DataDir, "gossip-keyring.json"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: keyring file mode %v, want 0600", n.Name, st.Mode().Perm())
		}
	}
	for _, n := range cl.Nodes() {
		cl.Restart(n.Index)
		cl.WaitFor(n.Name+" back in the cluster", formTimeout, func() error {
			if err := cl.Formed(); err != nil {
				return err
			}
			if v, _, err := cl.Suffrages(); err != nil || v != 3 {
				return fmt.Errorf("%w: %d voters (%v)", holdfasttest.ErrNotYet, v, err)
			}
			return cl.CaughtUp()
		})
		if err := keyringIs(cl.Running(), newKey); err != nil {
			t.Fatalf("after restarting %s: %v", n.Name, err)
		}
		if !slices.EqualFunc(n.Config.Gossip.Keys, [][]byte{oldKey}, slices.Equal) {
			t.Fatalf("%s: Config.GossipKeys changed", n.Name)
		}
	}
	l := cl.WaitLeader(formTimeout)
	acquireOnce(t, cl, follower(cl, l), "after-restarts")
}

// TestGossipKeyringNewerRule checks which keyring a node starts with: its
// data dir's while Config.Gossip.Keys is unchanged, Config.Gossip.Keys once
// the configuration changed.
func TestGossipKeyringNewerRule(t *testing.T) {
	t.Parallel()
	a, b, c := gossipKey(1), gossipKey(2), gossipKey(3)
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.DataDir, cfg.Cluster.Voters, cfg.Cluster.BootstrapExpect = "solo", t.TempDir(), 1, 1
	cfg.Gossip.Keys = [][]byte{a}
	start := func(keys ...[]byte) *coordinator.Coordinator {
		t.Helper()
		cfg.Gossip.Keys = keys
		n, err := coordinator.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := func(n *coordinator.Coordinator, keys ...[]byte) {
		t.Helper()
		if _, all := n.GossipKeys(); !slices.EqualFunc(all, keys, slices.Equal) {
			t.Fatalf("keyring %d keys (primary %s), want %d (primary %s)", len(all), short(all[0]), len(keys), short(keys[0]))
		}
	}
	n := start(a)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := n.InstallGossipKey(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := n.UseGossipKey(ctx, b); err != nil {
		t.Fatal(err)
	}
	want(n, b, a)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start(a) // unchanged configuration: the data dir's keyring is newer
	want(n, b, a)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start(c) // changed configuration: it wins, and is persisted
	want(n, c)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start(c)
	want(n, c)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "gossip-keyring.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := coordinator.New(cfg); err == nil {
		_ = n.Close()
		t.Fatal("New started with a malformed keyring file")
	} else if !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Fatalf("malformed keyring: %v, want ErrInvalidConfig", err)
	}
}

// TestGossipKeyringInMemory: a node without a data dir keeps its keyring in
// memory and says so at start.
func TestGossipKeyringInMemory(t *testing.T) {
	t.Parallel()
	lc := newLogCounter("gossip keyring kept in memory only")
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.Cluster.BootstrapExpect = "diskless", 0
	cfg.Gossip.Keys = [][]byte{gossipKey(1)}
	cfg.Logger = lc.wrap(slog.New(slog.NewTextHandler(io.Discard, nil))) // Info enabled
	n, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := lc.atLeast(1); err != nil {
		t.Fatal(err)
	}
}
