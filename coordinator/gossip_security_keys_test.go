// Gossip key calls refused: keyring changes on a plain node, bad or
// missing keys across the cluster, and every step after Close.

package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// keyringRPC sends a hand-made keyring request to addr and returns the
// remote error code ("" on success).
func keyringRPC(t *testing.T, addr, op string, key []byte) string {
	t.Helper()
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	err = tr.Call(ctx, addr, "gossip.keyring", map[string]any{"op": op, "key": key}, nil)
	var re *transport.RemoteError
	if err != nil && !errors.As(err, &re) {
		t.Fatalf("keyring RPC %s to %s: %v", op, addr, err)
	}
	if re == nil {
		return ""
	}
	return re.Code
}

// TestGossipKeyPlainNode checks that a node without gossip encryption
// refuses every keyring change, locally and over RPC (a keyed node could
// not gossip with it, so only a hand-made call reaches it).
func TestGossipKeyPlainNode(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for name, f := range map[string]func(context.Context, []byte) error{
		"Install": c.InstallGossipKey, "Use": c.UseGossipKey, "Remove": c.RemoveGossipKey,
	} {
		if err := f(ctx, gossipKey(1)); !errors.Is(err, coordinator.ErrGossipNotEncrypted) {
			t.Errorf("%s on a plain node: %v, want ErrGossipNotEncrypted", name, err)
		}
	}
	if p, all := c.GossipKeys(); p != nil || all != nil {
		t.Errorf("plain node's GossipKeys = %x %x", p, all)
	}
	for _, op := range []string{"status", "install", "use", "remove"} {
		if code := keyringRPC(t, c.RPCAddr(), op, gossipKey(1)); code != "gossip_not_encrypted" {
			t.Errorf("keyring RPC %s to a plain node: code %q", op, code)
		}
	}
}

// TestGossipKeyRefusals checks that the cluster-wide calls refuse bad keys,
// check every member before changing any, name the members concerned, and
// report the members they could not reach.
func TestGossipKeyRefusals(t *testing.T) {
	t.Parallel()
	old, other := gossipKey(1), gossipKey(2)
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3,
		Configure: func(i int, c *coordinator.Config) { c.Gossip.Keys = [][]byte{old} }})
	cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	c0 := cl.Node(0).C()
	if err := c0.InstallGossipKey(ctx, old[:20]); !errors.Is(err, coordinator.ErrInvalidGossipKey) {
		t.Errorf("Install of a 20-byte key: %v, want ErrInvalidGossipKey", err)
	}
	err := c0.UseGossipKey(ctx, other)
	if !errors.Is(err, coordinator.ErrGossipKeyNotInstalled) || !strings.Contains(err.Error(), "on node0, node1, node2 ") {
		t.Errorf("Use of a key installed nowhere: %v, want ErrGossipKeyNotInstalled naming every node", err)
	}
	err = c0.RemoveGossipKey(ctx, old)
	if !errors.Is(err, coordinator.ErrGossipKeyPrimary) || !strings.Contains(err.Error(), "on node0, node1, node2 ") {
		t.Errorf("Remove of the primary: %v, want ErrGossipKeyPrimary naming every node", err)
	}
	for op, want := range map[string]string{"use": "gossip_key_not_installed", "remove": "gossip_key_primary"} {
		key := map[string][]byte{"use": other, "remove": old}[op]
		if code := keyringRPC(t, cl.Node(1).C().RPCAddr(), op, key); code != want {
			t.Errorf("keyring RPC %s: code %q, want %q", op, code, want)
		}
	}
	// Installed on node1 alone (by RPC): Use still refuses, naming the others.
	if code := keyringRPC(t, cl.Node(1).C().RPCAddr(), "install", other); code != "" {
		t.Fatalf("keyring RPC install: code %q", code)
	}
	err = c0.UseGossipKey(ctx, other)
	if !errors.Is(err, coordinator.ErrGossipKeyNotInstalled) || !strings.Contains(err.Error(), "on node0, node2 ") {
		t.Errorf("Use of a key node1 alone has: %v, want ErrGossipKeyNotInstalled naming node0 and node2", err)
	}
	if err := keyringIs(cl.Nodes()[1:2], old, other); err != nil {
		t.Error(err)
	}
	if err := keyringIs([]*holdfasttest.Node{cl.Node(0), cl.Node(2)}, old); err != nil {
		t.Errorf("a refused call changed a keyring: %v", err)
	}
	if err := c0.RemoveGossipKey(ctx, other); err != nil {
		t.Fatalf("removing a secondary key installed on one node: %v", err)
	}
	cl.Kill(2)
	err = c0.InstallGossipKey(ctx, other)
	if m := memberNamed(c0, "node2"); err == nil && m.State == coordinator.MemberAlive {
		t.Error("Install succeeded although a member gossip sees alive is down")
	} else if err != nil && !strings.Contains(err.Error(), "node2 (") {
		t.Errorf("the error does not name the node that is down: %v", err)
	}
}

// memberNamed returns c's view of the member called name.
func memberNamed(c *coordinator.Coordinator, name string) coordinator.Member {
	for _, m := range c.Members() {
		if m.Name == name {
			return m
		}
	}
	return coordinator.Member{}
}

// keyringIs checks that every node of group has exactly keys, primary
// first.
func keyringIs(group []*holdfasttest.Node, keys ...[]byte) error {
	for _, n := range group {
		p, all := n.C().GossipKeys()
		if !bytes.Equal(p, keys[0]) || len(all) != len(keys) {
			return fmt.Errorf("%s: primary %s, %d keys; want %s, %d keys", n.Name, short(p), len(all), short(keys[0]), len(keys))
		}
		for i := range keys {
			if !bytes.Equal(all[i], keys[i]) {
				return fmt.Errorf("%s: key %d is %s, want %s", n.Name, i, short(all[i]), short(keys[i]))
			}
		}
	}
	return nil
}

func short(k []byte) string {
	if len(k) == 0 {
		return "none"
	}
	return fmt.Sprintf("%x…", k[:2])
}

// TestGossipKeyStepsAfterClose: every rotation step of a closed node
// returns ErrShutdown, and its keyring is unchanged.
func TestGossipKeyStepsAfterClose(t *testing.T) {
	t.Parallel()
	c := coordinator.DefaultLocalConfig()
	c.NodeName, c.Cluster.BootstrapExpect, c.Gossip.Keys = "n", 0, [][]byte{gossipKey(1)}
	node, err := coordinator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]func(context.Context, []byte) error{
		"install": node.InstallGossipKey, "use": node.UseGossipKey, "remove": node.RemoveGossipKey,
	}
	for name, step := range steps {
		if err := step(context.Background(), gossipKey(2)); !errors.Is(err, coordinator.ErrShutdown) {
			t.Errorf("%s after Close = %v, want ErrShutdown", name, err)
		}
	}
	if _, all := node.GossipKeys(); len(all) != 1 {
		t.Errorf("keyring after refused steps: %d keys, want 1", len(all))
	}
}
