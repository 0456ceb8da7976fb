package keyring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 5*time.Second)
}

// key returns a 32-byte key made of b.
func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// fakeGossip is one node's gossip keyring with membership's rules, and the
// member list its cluster shares.
type fakeGossip struct {
	mu      sync.Mutex
	keys    [][]byte // nil: not encrypted; keys[0] is the primary
	cluster *fakeCluster
}

func (g *fakeGossip) Encrypted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.keys != nil
}

func (g *fakeGossip) Keys() (primary []byte, all [][]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range g.keys {
		all = append(all, bytes.Clone(k))
	}
	if len(all) > 0 {
		primary = all[0]
	}
	return primary, all
}

func (g *fakeGossip) index(k []byte) int {
	return slices.IndexFunc(g.keys, func(x []byte) bool { return bytes.Equal(x, k) })
}

func (g *fakeGossip) InstallKey(k []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch n := len(k); {
	case g.keys == nil:
		return membership.ErrNotEncrypted
	case n != 16 && n != 24 && n != 32:
		return fmt.Errorf("%w: %d bytes", membership.ErrInvalidKey, n)
	case g.index(k) < 0:
		g.keys = append(g.keys, bytes.Clone(k))
	}
	return nil
}

func (g *fakeGossip) UseKey(k []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		return membership.ErrNotEncrypted
	}
	i := g.index(k)
	if i < 0 {
		return membership.ErrKeyNotInstalled
	}
	g.keys[0], g.keys[i] = g.keys[i], g.keys[0]
	return nil
}

func (g *fakeGossip) RemoveKey(k []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		return membership.ErrNotEncrypted
	}
	switch i := g.index(k); {
	case i == 0:
		return membership.ErrPrimaryKey
	case i > 0:
		g.keys = slices.Delete(g.keys, i, i+1)
	}
	return nil
}

func (g *fakeGossip) Members() []membership.Member { return g.cluster.members() }

// fakeCluster is a set of nodes whose keyrings reach each other through
// fakeCaller, over the real wire encoding.
type fakeCluster struct {
	mu     sync.Mutex
	order  []string
	nodes  map[string]*Keyring
	gossip map[string]*fakeGossip
	states map[string]membership.State
	down   map[string]bool // calls to these nodes fail
	calls  map[string]int  // RPCs received, by node
}

// newCluster makes nodes n0..n(size-1), each with keys (copied); nil keys
// leave a node unencrypted.
func newCluster(t *testing.T, size int, keys ...[]byte) *fakeCluster {
	t.Helper()
	c := &fakeCluster{nodes: map[string]*Keyring{}, gossip: map[string]*fakeGossip{},
		states: map[string]membership.State{}, down: map[string]bool{}, calls: map[string]int{}}
	for i := range size {
		c.add(fmt.Sprintf("n%d", i), keys, nil)
	}
	return c
}

// add adds node name with keys and store.
func (c *fakeCluster) add(name string, keys [][]byte, store *Store) *Keyring {
	g := &fakeGossip{cluster: c}
	for _, k := range keys {
		g.keys = append(g.keys, bytes.Clone(k))
	}
	k := New(Options{NodeName: name, Gossip: g, Store: store, Caller: fakeCaller{c}, Timeout: time.Second})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, name)
	c.nodes[name], c.gossip[name], c.states[name] = k, g, membership.Alive
	return k
}

func (c *fakeCluster) members() []membership.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []membership.Member
	for _, n := range c.order {
		out = append(out, membership.Member{Name: n, State: c.states[n], Meta: membership.Meta{RPCAddr: "addr-" + n}})
	}
	return out
}

// keysOf returns node name's keys, the primary first.
func (c *fakeCluster) keysOf(name string) [][]byte {
	_, all := c.gossip[name].Keys()
	return all
}

// fakeCaller delivers a call to the addressed node's Serve, encoding the
// request and the reply as the transport does.
type fakeCaller struct{ c *fakeCluster }

func (f fakeCaller) Call(ctx context.Context, addr, method string, req, resp any) error {
	name, ok := bytes.CutPrefix([]byte(addr), []byte("addr-"))
	if !ok || method != wire.MethodGossipKeyring {
		return fmt.Errorf("fake: bad call %s %s", addr, method)
	}
	f.c.mu.Lock()
	node, down := f.c.nodes[string(name)], f.c.down[string(name)]
	f.c.calls[string(name)]++
	f.c.mu.Unlock()
	if down {
		return errors.New("fake: connection refused")
	}
	body, err := transport.Encode(req)
	if err != nil {
		return err
	}
	out, err := node.Serve(body)
	var re *transport.RemoteError
	if errors.As(err, &re) {
		return &transport.RemoteError{Code: re.Code, Message: re.Message} // as the wire carries it
	} else if err != nil {
		return &transport.RemoteError{Code: "internal", Message: err.Error()}
	}
	return transport.Decode(out, resp)
}
