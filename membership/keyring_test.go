package membership

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// testKey returns a key of n bytes filled with b.
func testKey(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func withKeys(keys ...[]byte) func(*Config) {
	return func(c *Config) { c.Keys = keys }
}

// absent checks that no node in nodes lists any of names.
func absent(nodes []*Membership, names ...string) error {
	for _, m := range nodes {
		for _, n := range names {
			if mb, ok := m.Member(n); ok {
				return fmt.Errorf("%s lists %s (%v)", m.Local().Name, n, mb.State)
			}
		}
	}
	return nil
}

// alone checks that m sees only itself.
func alone(m *Membership) error {
	if ms := m.Members(); len(ms) != 1 {
		return fmt.Errorf("%s sees %v", m.Local().Name, ms)
	}
	return nil
}

func TestKeysValidation(t *testing.T) {
	k16 := testKey(1, 16)
	for _, c := range []struct {
		keys [][]byte
		want string
	}{
		{[][]byte{testKey(1, 15)}, "Config.Keys[0]: 15 bytes; must be 16, 24 or 32"},
		{[][]byte{k16, {}}, "Config.Keys[1]: 0 bytes"},
		{[][]byte{k16, testKey(2, 33)}, "Config.Keys[1]: 33 bytes"},
		{[][]byte{k16, testKey(2, 24), testKey(1, 16)}, "Config.Keys[2]: duplicate of Config.Keys[0]"},
	} {
		_, err := New(Config{NodeName: "n", BindAddr: "127.0.0.1:0", Profile: Local, Keys: c.keys})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New with %d keys: %v, want %q", len(c.keys), err, c.want)
		}
	}
	for _, n := range []int{16, 24, 32} {
		m, err := New(Config{NodeName: "n", BindAddr: "127.0.0.1:0", Profile: Local, Keys: [][]byte{testKey(1, n)}})
		if err != nil {
			t.Fatalf("%d-byte key: %v", n, err)
		}
		if !m.Encrypted() {
			t.Errorf("%d-byte key: not encrypted", n)
		}
		if err := m.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncryptedPool checks that only nodes holding the pool's key join it:
// a node without a key and a node with another key fail to join and never
// appear in any member's view, while a node with the key, started at the
// same time, joins.
func TestEncryptedPool(t *testing.T) {
	key := testKey(7, 32)
	a := startNode(t, "a", withKeys(key))
	b := startNode(t, "b", withKeys(key))
	join(t, b, a)
	pool := []*Membership{a, b}
	testkit.Eventually(t, "a and b", waitTimeout, func() error { return allAlive(pool, "a", "b") })

	plain := startNode(t, "plain")
	wrong := startNode(t, "wrong", withKeys(testKey(8, 32)))
	good := startNode(t, "good", withKeys(testKey(9, 16), key))
	good2 := startNode(t, "good2", withKeys(key))
	for _, m := range []*Membership{plain, wrong, good} {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := m.Join(ctx, []string{a.Addr()})
		cancel()
		if err == nil {
			t.Errorf("%s joined a pool whose key it does not encrypt with", m.Local().Name)
		}
		t.Logf("%s: %v", m.Local().Name, err)
	}
	// The keyed pool cannot join the plain node either.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := a.Join(ctx, []string{plain.Addr()}); err == nil {
		t.Error("an encrypted node joined a plain-text node")
	}
	join(t, good2, b)
	all := append(pool, good2)
	testkit.Eventually(t, "good2 in the pool", waitTimeout, func() error {
		if err := absent(all, "plain", "wrong", "good"); err != nil {
			t.Fatal(err)
		}
		return allAlive(all, "a", "b", "good2")
	})
	for _, m := range []*Membership{plain, wrong, good} {
		if err := alone(m); err != nil {
			t.Error(err)
		}
	}
}

func TestKeyringOps(t *testing.T) {
	k1, k2, k3 := testKey(1, 16), testKey(2, 24), testKey(3, 32)
	cfgKeys := [][]byte{bytes.Clone(k1)}
	m := startNode(t, "n1", withKeys(cfgKeys...))
	cfgKeys[0][0] = 99 // New copied the keys
	checkKeys := func(wantPrimary []byte, want ...[]byte) {
		t.Helper()
		p, all := m.Keys()
		if !bytes.Equal(p, wantPrimary) || len(all) != len(want) {
			t.Fatalf("Keys = %x %x, want %x %x", p, all, wantPrimary, want)
		}
		for i := range want {
			if !bytes.Equal(all[i], want[i]) {
				t.Fatalf("Keys = %x, want %x", all, want)
			}
		}
	}
	checkKeys(k1, k1)
	if err := m.InstallKey(testKey(4, 17)); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("InstallKey(17 bytes) = %v, want ErrInvalidKey", err)
	}
	for _, k := range [][]byte{k2, k3, k2} {
		if err := m.InstallKey(k); err != nil {
			t.Fatal(err)
		}
	}
	checkKeys(k1, k1, k2, k3)
	if err := m.UseKey(testKey(5, 16)); !errors.Is(err, ErrKeyNotInstalled) {
		t.Errorf("UseKey(unknown) = %v, want ErrKeyNotInstalled", err)
	}
	if err := m.RemoveKey(k1); !errors.Is(err, ErrPrimaryKey) {
		t.Errorf("RemoveKey(primary) = %v, want ErrPrimaryKey", err)
	}
	if err := m.RemoveKey(k2); err != nil { // a key in the middle
		t.Fatal(err)
	}
	checkKeys(k1, k1, k3)
	if err := m.UseKey(k3); err != nil {
		t.Fatal(err)
	}
	checkKeys(k3, k3, k1)
	if err := m.RemoveKey(k1); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveKey(k1); err != nil {
		t.Errorf("removing a key that is not installed: %v", err)
	}
	_, all := m.Keys()
	all[0][0] = 42 // Keys returns copies
	checkKeys(k3, k3)

	plain := startNode(t, "n2")
	if p, all := plain.Keys(); plain.Encrypted() || p != nil || all != nil {
		t.Errorf("plain node: Encrypted %v, Keys %x %x", plain.Encrypted(), p, all)
	}
	for name, err := range map[string]error{
		"InstallKey": plain.InstallKey(k1), "UseKey": plain.UseKey(k1), "RemoveKey": plain.RemoveKey(k1),
	} {
		if !errors.Is(err, ErrNotEncrypted) {
			t.Errorf("%s on a plain node: %v, want ErrNotEncrypted", name, err)
		}
	}
}

// TestKeyRotation rotates a pool's key in three steps and checks after
// each that the pool stays whole (no member ever leaves Alive), and that in
// the end only the new key is accepted.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := testKey(1, 32), testKey(2, 32)
	names := []string{"n1", "n2", "n3"}
	nodes := make([]*Membership, len(names))
	for i, n := range names {
		nodes[i] = startNode(t, n, withKeys(oldKey))
	}
	for _, m := range nodes[1:] {
		join(t, m, nodes[0])
	}
	testkit.Eventually(t, "convergence", waitTimeout, func() error { return allAlive(nodes, names...) })
	since := sinceOf(nodes)
	steady := func(step string) {
		t.Helper()
		testkit.Eventually(t, "all alive after "+step, waitTimeout, func() error { return allAlive(nodes, names...) })
		if got := sinceOf(nodes); got != since {
			t.Fatalf("after %s a member changed state: %v, was %v", step, got, since)
		}
	}
	each := func(step string, op func(*Membership, []byte) error, key []byte) {
		t.Helper()
		for _, m := range nodes {
			if err := op(m, key); err != nil {
				t.Fatalf("%s on %s: %v", step, m.Local().Name, err)
			}
		}
		steady(step)
	}
	each("install", (*Membership).InstallKey, newKey)
	each("use", (*Membership).UseKey, newKey)
	joiner := startNode(t, "joiner", withKeys(newKey))
	join(t, joiner, nodes[1])
	testkit.Eventually(t, "the new-key node in the pool", waitTimeout, func() error {
		return allAlive(append(nodes, joiner), append(names, "joiner")...)
	})
	nodes, names = append(nodes, joiner), append(names, "joiner")
	since = sinceOf(nodes)
	each("remove", (*Membership).RemoveKey, oldKey)

	stale := startNode(t, "stale", withKeys(oldKey))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := stale.Join(ctx, []string{nodes[0].Addr()}); err == nil {
		t.Fatal("a node with the removed key joined")
	}
	late := startNode(t, "late", withKeys(newKey))
	join(t, late, nodes[2])
	testkit.Eventually(t, "late in the pool", waitTimeout, func() error {
		if err := absent(nodes, "stale"); err != nil {
			t.Fatal(err)
		}
		return allAlive(append(nodes, late), append(names, "late")...)
	})
	for _, m := range nodes {
		if p, all := m.Keys(); !bytes.Equal(p, newKey) || len(all) != 1 {
			t.Errorf("%s keyring %x %x, want only the new key", m.Local().Name, p, all)
		}
	}
}

// sinceOf renders every node's view of every member's state and Since.
func sinceOf(nodes []*Membership) string {
	var b strings.Builder
	for _, m := range nodes {
		for _, mb := range m.Members() {
			fmt.Fprintf(&b, "%s:%s=%v@%d ", m.Local().Name, mb.Name, mb.State, mb.Since.UnixNano())
		}
	}
	return b.String()
}

// TestRemoveKeyNoRace removes keys from the middle of the keyring while
// another goroutine reads it the way memberlist's packet decryption does
// (GetKeys, then the keys without the lock). Under -race it fails if
// RemoveKey shifts keys in place (see RemoveKey).
func TestRemoveKeyNoRace(t *testing.T) {
	k1, k2, k3 := testKey(1, 16), testKey(2, 16), testKey(3, 16)
	m := startNode(t, "n1", withKeys(k1, k2, k3))
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			for _, k := range m.keyring.GetKeys() {
				if bytes.Equal(k, k3) {
					n++
				}
			}
		}
	}()
	for range 500 {
		for _, k := range [][]byte{k2, k3} {
			if err := m.RemoveKey(k); err != nil {
				t.Fatal(err)
			}
			if err := m.InstallKey(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	t.Logf("reader saw k3 %d times", <-done)
	if p, all := m.Keys(); !bytes.Equal(p, k1) || len(all) != 3 {
		t.Fatalf("keyring %x %x", p, all)
	}
}
