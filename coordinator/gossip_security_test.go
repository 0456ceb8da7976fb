package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
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

// sinceOf records when each node of group last saw each member of group
// change state.
func sinceOf(group []*holdfasttest.Node) map[string]time.Time {
	in := map[string]bool{}
	for _, n := range group {
		in[n.Name] = true
	}
	out := map[string]time.Time{}
	for _, n := range group {
		for _, m := range n.C().Members() {
			if in[m.Name] {
				out[n.Name+" sees "+m.Name] = m.Since
			}
		}
	}
	return out
}

// churn commits a lease grant and its release from c every few
// milliseconds until ctx ends, counting the rounds; the first error is
// sent on errs.
func churn(ctx context.Context, c *coordinator.Coordinator, ops *atomic.Int64, errs chan<- error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l, err := c.Acquire(ctx, "churn")
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			if ctx.Err() == nil {
				select {
				case errs <- err:
				default:
				}
			}
			continue
		}
		ops.Add(1)
	}
}

// probeWindow is how long the members are watched after each rotation
// step: memberlist's local profile probes one member a second and declares
// a member that stopped answering dead 3 s (SuspicionMult × ProbeInterval)
// after suspecting it, so a step that broke gossip between two members
// shows as a state change within this window.
const probeWindow = 5 * time.Second

// rotation is the state of TestGossipKeyRotationUnderLoad.
type rotation struct {
	t      *testing.T
	cl     *holdfasttest.Cluster
	keys   [][]byte             // the GossipKeys of the next node added
	group  []*holdfasttest.Node // the members
	since  map[string]time.Time // sinceOf(group) when it last grew
	stepAt time.Time            // when the last keyring step returned
	ops    atomic.Int64         // churn rounds
}

// step runs one keyring change and checks the members' keyrings after it.
func (r *rotation) step(name string, f func(context.Context, []byte) error, key []byte, want ...[]byte) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := f(ctx, key); err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	r.stepAt = time.Now()
	r.steady(name, want...)
}

// add creates a node (not started) with the given gossip keys.
func (r *rotation) add(keys ...[]byte) *holdfasttest.Node {
	r.keys = keys
	return r.cl.AddNoStart()
}

// steady checks that every member has exactly keys, primary first, and
// is stable.
func (r *rotation) steady(step string, keys ...[]byte) {
	r.t.Helper()
	if err := keyringIs(r.group, keys...); err != nil {
		r.t.Fatalf("after %s: %v", step, err)
	}
	r.stable(step)
	r.t.Logf("%s: %d members steady, %d lease rounds committed so far", step, len(r.group), r.ops.Load())
}

// stable checks that every member sees every other alive, and none saw
// another change state since the group last grew.
func (r *rotation) stable(step string) {
	r.t.Helper()
	if err := aliveAmong(r.group); err != nil {
		r.t.Fatalf("after %s: %v", step, err)
	}
	now := sinceOf(r.group)
	for k, v := range r.since {
		if !now[k].Equal(v) {
			r.t.Fatalf("after %s: %s changed state at %v", step, k, now[k].Format("15:04:05.000"))
		}
	}
}

// admit starts n and waits until every member sees it alive, it is in the
// raft configuration and it owns a shard (a handoff), and probeWindow has
// passed since the last step. Meanwhile no member may change state and no
// member may list any of outs. n then joins the group.
func (r *rotation) admit(step string, n *holdfasttest.Node, outs ...*holdfasttest.Node) {
	r.t.Helper()
	group := append(r.group, n)
	start := time.Now()
	r.cl.WaitFor(step, formTimeout, func() error {
		outsiders(r.t, group, outs...)
		r.stable(step)
		if err := aliveAmong(group); err != nil {
			return err
		}
		if err := raftMember(r.cl, n); err != nil {
			return err
		}
		if len(n.C().Owned()) == 0 {
			return fmt.Errorf("%w: %s owns no shard", holdfasttest.ErrNotYet, n.Name)
		}
		if d := time.Since(r.stepAt); d < probeWindow {
			return fmt.Errorf("%w: watched the members for %v of %v", holdfasttest.ErrNotYet, d, probeWindow)
		}
		return nil
	})
	r.t.Logf("%s in %v; %d lease rounds committed so far", step, time.Since(start).Round(time.Millisecond), r.ops.Load())
	for _, m := range r.group {
		if err := r.pushPull(n, m); err != nil {
			r.t.Fatalf("%s: %s cannot exchange state with %s: %v", step, n.Name, m.Name, err)
		}
	}
	for _, o := range outs {
		for _, m := range group {
			if err := r.pushPull(o, m); err == nil || !strings.Contains(err.Error(), "crypt") {
				r.t.Fatalf("%s: %s exchanging state with %s: %v, want an encryption error", step, o.Name, m.Name, err)
			}
		}
	}
	r.group = group
	r.since = sinceOf(group)
}

// pushPull makes from join through to alone: a gossip state exchange that
// works only if to accepts from's primary key and from accepts to's.
func (r *rotation) pushPull(from, to *holdfasttest.Node) error {
	addr := to.C().GossipAddr()
	if r.cl.Net != nil {
		var err error
		if addr, err = r.cl.Net.IPAddr(addr); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	_, err := from.C().Join(ctx, []string{addr})
	return err
}

// TestGossipKeyRotationUnderLoad rotates the cluster's gossip key through
// the three steps, each from another node, while every node holds a leader
// lease and shards and one node keeps committing lease commands. After each
// step a node joins whose keys prove the step took effect everywhere: after
// the install one that encrypts with the new key (all must accept it),
// after the switch one that has only the new key (all must encrypt with
// it), after the removal another such node while one with only the old key
// is refused. Each newcomer must also be handed shards, which takes a few
// gossip probe rounds, and meanwhile no member may see another change
// state. In the end no lease and no session was lost, and shards changed
// hands only by handoff.
func TestGossipKeyRotationUnderLoad(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossipKey(1), gossipKey(2)
	mon := newShardMonitor()
	r := &rotation{t: t, keys: [][]byte{oldKey}}
	r.cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true,
		Configure: func(i int, c *coordinator.Config) {
			mon.configure(i, c)
			c.Shards.Count = 16
			c.Gossip.Keys = r.keys
		}})
	cl := r.cl
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, 16, formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 5*formTimeout)
	defer cancel()
	r.group = cl.Running()
	var leases []*coordinator.Lease
	sessions := map[string]string{}
	for _, n := range r.group {
		l, err := n.C().Acquire(ctx, "job-"+n.Name)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		sessions[n.Name] = n.C().SessionID()
	}
	r.since = sinceOf(r.group)
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnErrs := make(chan error, 1)
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		churn(churnCtx, cl.Node(1).C(), &r.ops, churnErrs)
	}()
	defer func() { stopChurn(); <-churnDone }()

	r.step("install", cl.Node(0).C().InstallGossipKey, newKey, oldKey, newKey)
	first := r.add(newKey, oldKey)
	cl.Start(first.Index)
	r.admit("a node encrypting with the new key joined", first)

	r.step("use", cl.Node(1).C().UseGossipKey, newKey, newKey, oldKey)
	second := r.add(newKey)
	cl.Start(second.Index)
	r.admit("a node with only the new key joined", second)

	if err := cl.Node(2).C().RemoveGossipKey(ctx, newKey); !errors.Is(err, coordinator.ErrGossipKeyPrimary) {
		t.Errorf("removing the primary: %v, want ErrGossipKeyPrimary", err)
	}
	r.step("remove", cl.Node(2).C().RemoveGossipKey, oldKey, newKey)
	stale, late := r.add(oldKey), r.add(newKey)
	cl.Start(stale.Index)
	cl.Start(late.Index)
	r.admit("another node with only the new key joined, one with only the old key did not", late, stale)

	stopChurn()
	<-churnDone
	checkNothingLost(t, leases, sessions, cl, mon)
	select {
	case err := <-churnErrs:
		t.Errorf("lease commands failed during the rotation (first error): %v", err)
	default:
	}
	if r.ops.Load() == 0 {
		t.Error("no lease command committed during the rotation")
	}
}

// checkNothingLost checks that every lease is still held, every original
// node kept its session, and every shard lease that ended was handed off.
func checkNothingLost(t *testing.T, leases []*coordinator.Lease, sessions map[string]string,
	cl *holdfasttest.Cluster, mon *shardMonitor) {
	t.Helper()
	for _, l := range leases {
		if err := l.Err(); err != nil {
			t.Errorf("lease %s lost: %v", l.Name(), err)
		}
	}
	for _, n := range cl.Running() {
		if want, ok := sessions[n.Name]; ok && n.C().SessionID() != want {
			t.Errorf("%s changed session: %s, was %s", n.Name, n.C().SessionID(), want)
		}
	}
	mon.mu.Lock()
	handedOff, held := 0, 0
	for s, ls := range mon.leases {
		for _, ml := range ls {
			switch err := ml.l.Err(); {
			case err == nil:
				held++
			case errors.Is(err, coordinator.ErrRevoked):
				handedOff++
			default:
				t.Errorf("shard %d lease of %s (token %d) ended otherwise than by handoff: %v", s, ml.node, ml.l.Token(), err)
			}
		}
	}
	mon.mu.Unlock()
	mon.check(t)
	t.Logf("shard leases: %d held, %d handed off", held, handedOff)
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
