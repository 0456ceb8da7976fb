package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// gossipKey returns a 32-byte key filled with b.
func gossipKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// Messages memberlist logs on the receiving side when it refuses gossip.
const (
	refusedWrongKey = "no installed keys could decrypt"
	refusedPlain    = "remote state is not encrypted"
)

// logCounter is a slog.Handler that counts records whose message contains
// one of its patterns, then passes them on.
type logCounter struct {
	slog.Handler
	hits map[string]*atomic.Int64
}

func newLogCounter(patterns ...string) *logCounter {
	lc := &logCounter{hits: map[string]*atomic.Int64{}}
	for _, p := range patterns {
		lc.hits[p] = new(atomic.Int64)
	}
	return lc
}

// wrap returns a logger counting into lc and writing to l.
func (lc *logCounter) wrap(l *slog.Logger) *slog.Logger {
	return slog.New(&logCounter{Handler: l.Handler(), hits: lc.hits})
}

func (lc *logCounter) Handle(ctx context.Context, r slog.Record) error {
	for p, n := range lc.hits {
		if strings.Contains(r.Message, p) {
			n.Add(1)
		}
	}
	return lc.Handler.Handle(ctx, r)
}

func (lc *logCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCounter{Handler: lc.Handler.WithAttrs(as), hits: lc.hits}
}

func (lc *logCounter) WithGroup(name string) slog.Handler {
	return &logCounter{Handler: lc.Handler.WithGroup(name), hits: lc.hits}
}

// atLeast reports nil once every pattern was counted n times.
func (lc *logCounter) atLeast(n int64) error {
	for p, c := range lc.hits {
		if got := c.Load(); got < n {
			return fmt.Errorf("%w: %q logged %d times, want %d", holdfasttest.ErrNotYet, p, got, n)
		}
	}
	return nil
}

// aliveAmong checks that every node of group sees every other one alive.
func aliveAmong(group []*holdfasttest.Node) error {
	for _, n := range group {
		alive := map[string]bool{}
		for _, m := range n.C().Members() {
			alive[m.Name] = m.State == coordinator.MemberAlive
		}
		for _, o := range group {
			if !alive[o.Name] {
				return fmt.Errorf("%w: %s does not see %s alive", holdfasttest.ErrNotYet, n.Name, o.Name)
			}
		}
	}
	return nil
}

// outsiders fails the test if a node of group lists one of outs, or an
// outsider lists anyone but itself.
func outsiders(t *testing.T, group []*holdfasttest.Node, outs ...*holdfasttest.Node) {
	t.Helper()
	for _, n := range group {
		for _, m := range n.C().Members() {
			for _, o := range outs {
				if m.Name == o.Name {
					t.Fatalf("%s lists %s (%s, %s): a node without the gossip key got in", n.Name, o.Name, m.State, m.Suffrage)
				}
			}
		}
	}
	for _, o := range outs {
		if ms := o.C().Members(); len(ms) != 1 {
			t.Fatalf("%s, outside, sees %d members: %+v", o.Name, len(ms), ms)
		}
		if id := o.C().ClusterID(); id != "" {
			t.Fatalf("%s, outside, learned cluster %s", o.Name, id)
		}
	}
}

// raftMember reports nil once the leader has n in its raft configuration.
func raftMember(cl *holdfasttest.Cluster, n *holdfasttest.Node) error {
	l, err := cl.Leader()
	if err != nil {
		return err
	}
	for _, m := range l.C().Members() {
		if m.Name == n.Name && m.Suffrage != coordinator.SuffrageNone {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not in %s's raft configuration", holdfasttest.ErrNotYet, n.Name, l.Name)
}

func TestGossipKeyJoin(t *testing.T) {
	t.Parallel()
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprintf("inmem=%v", inMemory), func(t *testing.T) { testGossipKeyJoin(t, inMemory) })
	}
}

// testGossipKeyJoin starts a keyed cluster, then at once a node without a
// key, one with another key and one with the cluster's key. The keyed node
// joins and becomes a raft member; meanwhile the cluster refuses the other
// two again and again (counted in its logs), and they never appear in any
// member's view, nor does any member appear in theirs.
func testGossipKeyJoin(t *testing.T, inMemory bool) {
	key := gossipKey(1)
	refusals := newLogCounter(refusedWrongKey, refusedPlain)
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: inMemory,
		Configure: func(i int, c *coordinator.Config) {
			switch i {
			case 3: // plain
			case 4:
				c.Gossip.Keys = [][]byte{gossipKey(2)}
			default:
				c.Gossip.Keys = [][]byte{key}
				c.Logger = refusals.wrap(c.Logger)
			}
		}})
	cl.WaitFormed(formTimeout)
	plain, wrong, good := cl.AddNoStart(), cl.AddNoStart(), cl.AddNoStart()
	for _, n := range []*holdfasttest.Node{plain, wrong, good} {
		cl.Start(n.Index)
	}
	keyed := []*holdfasttest.Node{cl.Node(0), cl.Node(1), cl.Node(2), good}
	start := time.Now()
	cl.WaitFor("the keyed node in the cluster, and many refusals of the others", formTimeout, func() error {
		outsiders(t, keyed, plain, wrong)
		if err := aliveAmong(keyed); err != nil {
			return err
		}
		if err := raftMember(cl, good); err != nil {
			return err
		}
		return refusals.atLeast(15)
	})
	t.Logf("after %v: %d wrong-key and %d plain-text join attempts refused", time.Since(start).Round(time.Millisecond),
		refusals.hits[refusedWrongKey].Load(), refusals.hits[refusedPlain].Load())
	outsiders(t, keyed, plain, wrong)

	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	seed := cl.Node(0).C().GossipAddr()
	if cl.Net != nil {
		seed, _ = cl.Net.IPAddr(seed)
	}
	for _, o := range []*holdfasttest.Node{plain, wrong} {
		_, err := o.C().Join(ctx, []string{seed})
		if err == nil || !strings.Contains(err.Error(), "crypt") {
			t.Errorf("%s: Join = %v, want an encryption error", o.Name, err)
		}
	}
}

func TestGossipKeysValidation(t *testing.T) {
	t.Parallel()
	k16, k24, k32 := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 24), bytes.Repeat([]byte{3}, 32)
	for _, tc := range []struct {
		keys [][]byte
		want string // "" means valid
	}{
		{nil, ""},
		{[][]byte{k16}, ""},
		{[][]byte{k32, k24, k16}, ""},
		{[][]byte{k16[:15]}, "Gossip.Keys[0]: 15 bytes; must be 16, 24 or 32"},
		{[][]byte{k16, k24[:23]}, "Gossip.Keys[1]: 23 bytes; must be 16, 24 or 32"},
		{[][]byte{k32, {}}, "Gossip.Keys[1]: 0 bytes; must be 16, 24 or 32"},
		{[][]byte{k32, nil}, "Gossip.Keys[1]: 0 bytes; must be 16, 24 or 32"},
		{[][]byte{append(k32, 0)}, "Gossip.Keys[0]: 33 bytes; must be 16, 24 or 32"},
		{[][]byte{k16, k24, bytes.Clone(k16)}, "Gossip.Keys[2]: duplicate of Gossip.Keys[0]"},
	} {
		c := coordinator.DefaultLocalConfig()
		c.NodeName, c.DataDir, c.Cluster.BootstrapExpect, c.Cluster.Voters = "n", t.TempDir(), 1, 1
		c.Gossip.Keys = tc.keys
		node, err := coordinator.New(c)
		if err == nil {
			primary, all := node.GossipKeys()
			if err := node.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				t.Errorf("%d keys: New accepted them, want %q", len(tc.keys), tc.want)
			} else if len(all) != len(tc.keys) || (len(all) > 0 && !bytes.Equal(primary, tc.keys[0])) {
				t.Errorf("keyring %x %x, want %x", primary, all, tc.keys)
			}
			continue
		}
		if tc.want == "" || !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d keys: New = %v, want an ErrInvalidConfig with %q", len(tc.keys), err, tc.want)
		}
	}
}
