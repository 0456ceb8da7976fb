package keyring

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// wantKeys fails unless every named node's keyring is want, primary first.
func wantKeys(t *testing.T, c *fakeCluster, want [][]byte, names ...string) {
	t.Helper()
	for _, n := range names {
		if got := c.keysOf(n); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%s: keyring %x, want %x", n, got, want)
		}
	}
}

// TestRotation runs the three steps from one node: after each, every live
// member has the same keyring.
func TestRotation(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 3, oldK)
	k := c.nodes["n0"]
	ctx := context.Background()
	if err := k.Install(ctx, newK); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n1", "n2")
	if err := k.Use(ctx, newK); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, c, [][]byte{newK, oldK}, "n0", "n1", "n2")
	if err := k.Remove(ctx, oldK); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, c, [][]byte{newK}, "n0", "n1", "n2")
	if c.calls["n0"] != 0 {
		t.Errorf("the calling node got %d RPCs; it applies its own steps locally", c.calls["n0"])
	}
}

// TestUseRefusedUnlessInstalledEverywhere: a key one live member lacks is
// made primary nowhere, and the error names that member.
func TestUseRefusedUnlessInstalledEverywhere(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 3, oldK)
	for _, n := range []string{"n0", "n1"} {
		if _, err := c.nodes[n].Apply(wire.KeyringRequest{Op: wire.KeyringInstall, Key: newK}); err != nil {
			t.Fatal(err)
		}
	}
	err := c.nodes["n0"].Use(context.Background(), newK)
	if !errors.Is(err, wire.ErrGossipKeyNotInstalled) || !strings.Contains(err.Error(), "on n2 ") || strings.Contains(err.Error(), "n1") {
		t.Fatalf("Use = %v; want wire.ErrGossipKeyNotInstalled naming n2 only", err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n1")
	wantKeys(t, c, [][]byte{oldK}, "n2")
}

// TestRemovePrimaryRefused: removing a key that is some live member's
// primary changes nothing and names the members.
func TestRemovePrimaryRefused(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 3, oldK, newK)
	if _, err := c.nodes["n1"].Apply(wire.KeyringRequest{Op: wire.KeyringUse, Key: newK}); err != nil {
		t.Fatal(err)
	}
	err := c.nodes["n1"].Remove(context.Background(), oldK)
	if !errors.Is(err, wire.ErrGossipKeyPrimary) || !strings.Contains(err.Error(), "on n0, n2 ") {
		t.Fatalf("Remove = %v; want wire.ErrGossipKeyPrimary naming n0, n2", err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n2")
	wantKeys(t, c, [][]byte{newK, oldK}, "n1")
}

// TestMemberMissingStepFails: a member the install cannot reach fails the
// whole operation, named in the error; the others have the key, and the
// repeated step, once the member is back, completes the install.
func TestMemberMissingStepFails(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 3, oldK)
	c.down["n2"] = true
	k := c.nodes["n0"]
	err := k.Install(context.Background(), newK)
	if err == nil || !strings.Contains(err.Error(), "n2 (addr-n2)") || strings.Contains(err.Error(), "n1 (") {
		t.Fatalf("Install with n2 unreachable = %v; want an error naming n2 only", err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n1")
	wantKeys(t, c, [][]byte{oldK}, "n2")
	// Use must not go ahead while n2 cannot confirm it has the key.
	if err := k.Use(context.Background(), newK); err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("Use with n2 unreachable = %v; want a refusal that changed nothing", err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n1")
	c.down["n2"] = false
	if err := k.Install(context.Background(), newK); err != nil {
		t.Fatalf("repeated Install: %v", err)
	}
	wantKeys(t, c, [][]byte{oldK, newK}, "n0", "n1", "n2")
}

// TestOnlyLiveMembers: members gossip does not report alive are not
// reached (they must be started with the current keys).
func TestOnlyLiveMembers(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 3, oldK)
	c.states["n2"] = membership.Failed
	if err := c.nodes["n0"].Install(context.Background(), newK); err != nil {
		t.Fatal(err)
	}
	if c.calls["n2"] != 0 {
		t.Errorf("a failed member got %d calls", c.calls["n2"])
	}
	wantKeys(t, c, [][]byte{oldK}, "n2")
}

// TestRefusals: an unencrypted node (locally or remote), a key of the
// wrong size; the sentinels survive the RPC.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	plain := newCluster(t, 1)
	if err := plain.nodes["n0"].Install(ctx, key(2)); !errors.Is(err, wire.ErrGossipNotEncrypted) || !strings.Contains(err.Error(), "n0") {
		t.Errorf("Install on a plain node = %v, want wire.ErrGossipNotEncrypted naming it", err)
	}
	c := newCluster(t, 2, key(1))
	c.add("plain", nil, nil)
	err := c.nodes["n0"].Install(ctx, key(2))
	if !errors.Is(err, wire.ErrGossipNotEncrypted) || !strings.Contains(err.Error(), "plain (addr-plain)") {
		t.Errorf("Install reaching a plain member = %v, want wire.ErrGossipNotEncrypted naming it", err)
	}
	if err := c.nodes["n0"].Install(ctx, key(3)[:15]); !errors.Is(err, wire.ErrInvalidGossipKey) {
		t.Errorf("Install of a 15-byte key = %v, want wire.ErrInvalidGossipKey", err)
	}
	if _, err := c.nodes["n1"].Apply(wire.KeyringRequest{Op: "rotate", Key: key(2)}); err == nil {
		t.Error("an unknown operation was applied")
	}
}

// TestClosedRefusesEverything: once Options.Closed reports an error, every
// cluster-wide step returns it and no member's keyring changes.
func TestClosedRefusesEverything(t *testing.T) {
	oldK, newK := key(1), key(2)
	c := newCluster(t, 2, oldK)
	closed := errors.New("shut down")
	k := c.nodes["n0"]
	k.o.Closed = func() error { return closed }
	ctx := context.Background()
	for name, step := range map[string]func(context.Context, []byte) error{"install": k.Install, "use": k.Use, "remove": k.Remove} {
		if err := step(ctx, newK); err != closed {
			t.Errorf("%s after close = %v, want the Closed error itself", name, err)
		}
	}
	wantKeys(t, c, [][]byte{oldK}, "n0", "n1")
}
