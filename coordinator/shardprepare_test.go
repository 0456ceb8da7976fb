package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// prepMonitor is a shard monitor whose nodes prepare shards: it records
// every Prepare (node, shard, from, how its context ended) and, for every
// drain, the next owner the old owner saw.
type prepMonitor struct {
	*shardMonitor
	mu       sync.Mutex
	prepares []*prepRecord
	next     map[coordinator.ShardID][]string // per shard: the next owners seen in Release
	// gate, if it returns a channel for a node, holds that node's Prepare
	// calls until the channel is closed or their context ends.
	gate func(node string) <-chan struct{}
}

type prepRecord struct {
	node  string
	shard coordinator.ShardID
	from  coordinator.Holder
	done  chan struct{} // closed when the context ended
	cause error
}

func newPrepMonitor() *prepMonitor {
	return &prepMonitor{shardMonitor: newShardMonitor(), next: map[coordinator.ShardID][]string{}}
}

func (m *prepMonitor) configure(i int, c *coordinator.Config) {
	node := fmt.Sprintf("node%d", i)
	h := m.handler(node).(coordinator.HandlerFuncs)
	release := h.ReleaseFunc
	h.ReleaseFunc = func(ctx context.Context, l *coordinator.ShardLease) error {
		next := ""
		if o, ok := l.NextOwner(); ok {
			next = o.Node
		}
		m.mu.Lock()
		m.next[l.Shard()] = append(m.next[l.Shard()], next)
		m.mu.Unlock()
		return release(ctx, l)
	}
	h.PrepareFunc = func(ctx context.Context, s coordinator.ShardID, from coordinator.Holder) error {
		r := &prepRecord{node: node, shard: s, from: from, done: make(chan struct{})}
		m.mu.Lock()
		m.prepares = append(m.prepares, r)
		gate := m.gate
		m.mu.Unlock()
		context.AfterFunc(ctx, func() {
			m.mu.Lock()
			r.cause = context.Cause(ctx)
			m.mu.Unlock()
			close(r.done)
		})
		if gate != nil {
			if ch := gate(node); ch != nil {
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
		}
		return nil
	}
	c.Shards.Handler = h
}

// preparedOn returns the prepares of shard s on node whose context ended
// because the lease started there.
func (m *prepMonitor) preparedOn(node string, s coordinator.ShardID) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.prepares {
		if r.node == node && r.shard == s && errors.Is(r.cause, context.Canceled) {
			n++
		}
	}
	return n
}

// started returns how many Prepare calls node received.
func (m *prepMonitor) started(node string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.prepares {
		if r.node == node {
			n++
		}
	}
	return n
}

// shardsOf returns the shards the replica of c shows owned by node.
func shardsOf(c *coordinator.Coordinator, node string) []coordinator.ShardID {
	var out []coordinator.ShardID
	for s := 0; s < c.Shards(); s++ {
		if o, ok := c.Owner(coordinator.ShardID(s)); ok && o.Node == node {
			out = append(out, coordinator.ShardID(s))
		}
	}
	return out
}

// checkPreparedMoves checks that every shard of moved, drained from node
// from, went to a node that prepared it, and that the old owner's drain
// named that node as the next owner.
func (m *prepMonitor) checkPreparedMoves(t *testing.T, cl *holdfasttest.Cluster, c *coordinator.Coordinator, moved []coordinator.ShardID) {
	t.Helper()
	waitOwned(t, cl, c, moved)
	for _, s := range moved {
		o, ok := c.Owner(s)
		if !ok {
			t.Errorf("shard %d unowned after the move", s)
			continue
		}
		if m.preparedOn(o.Node, s) == 0 {
			t.Errorf("shard %d went to %s, which did not prepare it", s, o.Node)
		}
		m.mu.Lock()
		next := m.next[s]
		m.mu.Unlock()
		if len(next) == 0 || next[len(next)-1] != o.Node {
			t.Errorf("shard %d: the drain saw next owners %q, the shard went to %s", s, next, o.Node)
		}
	}
}

// waitOwned waits until c's replica shows every shard of ss owned (Drain
// returns once the drained node owns none: the grants follow).
func waitOwned(t *testing.T, cl *holdfasttest.Cluster, c *coordinator.Coordinator, ss []coordinator.ShardID) {
	t.Helper()
	cl.WaitFor("the moved shards owned", formTimeout, func() error {
		for _, s := range ss {
			if info, ok := c.Table().Shard(s); !ok || info.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d %+v", holdfasttest.ErrNotYet, s, info)
			}
		}
		return nil
	})
}

func prepCluster(t *testing.T, nodes, shards int, m *prepMonitor, prepTimeout time.Duration) *holdfasttest.Cluster {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: nodes, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Shards.PrepareTimeout = prepTimeout
		m.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	return cl
}

// otherNode returns a running node that is not n (and not the leader when
// notLeader).
func otherNode(cl *holdfasttest.Cluster, not ...*holdfasttest.Node) *holdfasttest.Node {
	for _, n := range cl.Running() {
		skip := false
		for _, x := range not {
			skip = skip || n == x
		}
		if !skip {
			return n
		}
	}
	return nil
}

// TestShardsPrepareDrain: Drain moves every shard of a node to nodes that
// prepared it first, the old owner's drain knows the next owner, and no
// two nodes ever believe one shard at once.
func TestShardsPrepareDrain(t *testing.T) {
	const shards = 24
	m := newPrepMonitor()
	cl := prepCluster(t, 3, shards, m, 0)
	victim := otherNode(cl, cl.WaitLeader(formTimeout))
	moved := shardsOf(victim.C(), victim.Name)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := victim.C().Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	m.checkPreparedMoves(t, cl, victim.C(), moved)
	m.check(t)
}

// TestShardsPrepareTimeout: a next owner whose Prepare never reports
// ready holds the move up for PrepareTimeout only; the move then completes
// as without a prepare, and the grant ends the prepare (not abandoned).
func TestShardsPrepareTimeout(t *testing.T) {
	const shards = 16
	m := newPrepMonitor()
	never := make(chan struct{})
	defer close(never)
	m.gate = func(string) <-chan struct{} { return never }
	cl := prepCluster(t, 3, shards, m, 200*time.Millisecond)
	victim := otherNode(cl, cl.WaitLeader(formTimeout))
	moved := shardsOf(victim.C(), victim.Name)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := victim.C().Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	m.checkPreparedMoves(t, cl, victim.C(), moved)
	m.check(t)
}

// TestShardsPrepareTargetKilled: while the next owner prepares, it is
// killed: the drained node keeps serving the shards meant for it (nothing
// is revoked toward a target that did not prepare), they go to the other
// node once the dead one's session expires, and no shard is granted twice.
func TestShardsPrepareTargetKilled(t *testing.T) {
	const shards = 16
	m := newPrepMonitor()
	leader := (*holdfasttest.Node)(nil)
	hold := make(chan struct{})
	defer close(hold)
	var target string
	m.gate = func(node string) <-chan struct{} {
		if node == target {
			return hold
		}
		return nil
	}
	cl := prepCluster(t, 3, shards, m, time.Hour)
	leader = cl.WaitLeader(formTimeout)
	victim := otherNode(cl, leader)
	tgt := otherNode(cl, leader, victim)
	m.mu.Lock()
	target = tgt.Name
	m.mu.Unlock()
	moved := shardsOf(victim.C(), victim.Name)
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		defer cancel()
		drained <- victim.C().Drain(ctx)
	}()
	cl.WaitFor("the target preparing", formTimeout, func() error {
		if m.started(tgt.Name) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	start := time.Now()
	cl.Kill(tgt.Index)
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	waitOwned(t, cl, leader.C(), moved)
	_, perShard := m.grantsSince(start)
	for _, s := range moved {
		if o, ok := leader.C().Owner(s); !ok || o.Node != leader.Name {
			t.Errorf("shard %d: owner %+v after the drain, want %s", s, o, leader.Name)
		}
		if perShard[s] != 1 {
			t.Errorf("shard %d granted %d times after the kill: %s", s, perShard[s], m.historySince(s, start))
		}
	}
	m.check(t)
}

// TestShardsPrepareLeaderChange: the leader is killed while the next owner
// prepares: the drained node keeps its shards (no revoke was made), the
// next leader asks again (the prepare under way is the one it finds), and
// once the prepare reports ready the moves complete, each shard granted
// once.
func TestShardsPrepareLeaderChange(t *testing.T) {
	const shards = 16
	m := newPrepMonitor()
	hold := make(chan struct{})
	cl := prepCluster(t, 3, shards, m, time.Hour)
	m.mu.Lock()
	m.gate = func(string) <-chan struct{} { return hold }
	m.mu.Unlock()
	leader := cl.WaitLeader(formTimeout)
	victim := otherNode(cl, leader)
	tgt := otherNode(cl, leader, victim)
	moved := shardsOf(victim.C(), victim.Name)
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		defer cancel()
		drained <- victim.C().Drain(ctx)
	}()
	cl.WaitFor("the target preparing", formTimeout, func() error {
		if m.started(tgt.Name) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	start := time.Now()
	cl.Kill(leader.Index)
	next := cl.WaitLeader(formTimeout)
	if next == leader {
		t.Fatal("no new leader")
	}
	// The new leader's balancer plans with the drained node's shards still
	// its own: none is revoked while the prepare holds.
	for _, s := range moved {
		if info, ok := next.C().Table().Shard(s); !ok || info.Owner.Node != victim.Name || info.State != coordinator.ShardOwned {
			t.Errorf("shard %d: %+v while the next owner prepares, want owned by %s", s, info, victim.Name)
		}
	}
	close(hold)
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	waitOwned(t, cl, tgt.C(), moved)
	_, perShard := m.grantsSince(start)
	for _, s := range moved {
		if perShard[s] != 1 {
			t.Errorf("shard %d granted %d times after the leader change: %s", s, perShard[s], m.historySince(s, start))
		}
	}
	m.checkPreparedMoves(t, cl, tgt.C(), moved)
	m.check(t)
}

// TestShardsPrepareShutdown: Shutdown of a node whose peers prepare hands
// every shard off to a node that prepared it, and the audit is clean.
func TestShardsPrepareShutdown(t *testing.T) {
	const shards = 24
	m := newPrepMonitor()
	cl := prepCluster(t, 3, shards, m, 0)
	victim := otherNode(cl, cl.WaitLeader(formTimeout))
	other := otherNode(cl, victim)
	moved := shardsOf(victim.C(), victim.Name)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Stop(ctx, victim.Index); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	waitBalanced(t, cl, shards, formTimeout)
	m.checkPreparedMoves(t, cl, other.C(), moved)
	m.check(t)
}

// abandoned returns the prepares on node whose context ended as
// abandoned, once every prepare there ended.
func (m *prepMonitor) abandoned(node string) (n int, all bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all = true
	for _, r := range m.prepares {
		if r.node != node {
			continue
		}
		select {
		case <-r.done:
			if errors.Is(r.cause, coordinator.ErrMoveAbandoned) {
				n++
			}
		default:
			all = false
		}
	}
	return n, all
}

// TestShardsPrepareAbandonedOnUndrain: the plan changes while the next
// owner prepares (the drained node is undrained): the prepare is abandoned
// (its context ends with ErrMoveAbandoned) and the old owner keeps every
// shard, none granted again.
func TestShardsPrepareAbandonedOnUndrain(t *testing.T) {
	const shards = 16
	m := newPrepMonitor()
	hold := make(chan struct{})
	defer close(hold)
	cl := prepCluster(t, 3, shards, m, time.Hour)
	m.mu.Lock()
	m.gate = func(string) <-chan struct{} { return hold }
	m.mu.Unlock()
	leader := cl.WaitLeader(formTimeout)
	victim := otherNode(cl, leader)
	owned := shardsOf(victim.C(), victim.Name)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	start := time.Now()
	dctx, stopDrain := context.WithCancel(ctx)
	drained := make(chan error, 1)
	go func() { drained <- victim.C().Drain(dctx) }()
	cl.WaitFor("the targets preparing", formTimeout, func() error {
		if m.started(leader.Name) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	stopDrain()
	if err := <-drained; !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain: %v, want it cancelled", err)
	}
	if err := victim.C().Undrain(ctx); err != nil {
		t.Fatalf("Undrain: %v", err)
	}
	cl.WaitFor("the prepares abandoned", formTimeout, func() error {
		if n, all := m.abandoned(leader.Name); n == 0 || !all {
			return fmt.Errorf("%w: %d abandoned", holdfasttest.ErrNotYet, n)
		}
		return nil
	})
	for _, s := range owned {
		if info, ok := victim.C().Table().Shard(s); !ok || info.Owner.Node != victim.Name || info.State != coordinator.ShardOwned {
			t.Errorf("shard %d: %+v after the undrain, want owned by %s", s, info, victim.Name)
		}
	}
	if n, _ := m.grantsSince(start); n != 0 {
		t.Errorf("%d grants after the drain began, want none", n)
	}
	m.check(t)
}
