package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShardsPrepareDrain: Drain moves every shard of a node to nodes that
// prepared it first, the old owner's drain knows the next owner, and no
// two nodes ever believe one shard at once.
func TestShardsPrepareDrain(t *testing.T) {
	t.Parallel()
	const shards = 24
	m := newPrepMonitor()
	cl := prepCluster(t, 3, shards, m, 0)
	drainFollowerChecked(t, cl, m)
}

// TestShardsPrepareTimeout: a next owner whose Prepare never reports
// ready holds the move up for PrepareTimeout only; the move then completes
// as without a prepare, and the grant ends the prepare (not abandoned).
func TestShardsPrepareTimeout(t *testing.T) {
	t.Parallel()
	const shards = 16
	m := newPrepMonitor()
	never := make(chan struct{})
	defer close(never)
	m.gate = func(string) <-chan struct{} { return never }
	cl := prepCluster(t, 3, shards, m, 200*time.Millisecond)
	drainFollowerChecked(t, cl, m)
}

// TestShardsPrepareTargetKilled: while the next owner prepares, it is
// killed: the drained node keeps serving the shards meant for it (nothing
// is revoked toward a target that did not prepare), they go to the other
// node once the dead one's session expires, and no shard is granted twice.
func TestShardsPrepareTargetKilled(t *testing.T) {
	t.Parallel()
	const shards = 16
	m := newPrepMonitor()
	leader := (*holdfasttest.Node)(nil)
	hold := make(chan struct{})
	defer close(hold)
	var target string
	m.gate = func(node string) <-chan struct{} {
		m.mu.Lock()
		defer m.mu.Unlock()
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
	mark := m.mark()
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		defer cancel()
		drained <- victim.C().Drain(ctx)
	}()
	m.waitStarted(cl, tgt.Name, mark)
	before := m.leaseCounts()
	cl.Kill(tgt.Index)
	meant := m.shardsSince(tgt.Name, mark) // the moves held for the killed target
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	waitOwned(t, cl, leader.C(), moved)
	// The table shows the grant before the new owner's handler (the
	// monitor) sees it: wait for the monitor, then count.
	m.waitGranted(cl, before, meant)
	perShard, who := m.grantsAfter(before)
	for _, s := range moved {
		if o, ok := leader.C().Owner(s); !ok || o.Node.Name != leader.Name {
			t.Errorf("shard %d: owner %+v after the drain, want %s", s, o, leader.Name)
		}
	}
	for _, s := range meant {
		if perShard[s] != 1 {
			t.Errorf("shard %d granted %d times after the kill: %v", s, perShard[s], who[s])
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
	t.Parallel()
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
	sessions := map[string]string{victim.Name: victim.C().SessionID(), tgt.Name: tgt.C().SessionID()}
	mark := m.mark()
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		defer cancel()
		drained <- victim.C().Drain(ctx)
	}()
	m.waitStarted(cl, tgt.Name, mark)
	before := m.leaseCounts()
	cl.Kill(leader.Index)
	next := cl.WaitLeader(formTimeout)
	if next == leader {
		t.Fatal("no new leader")
	}
	// The new leader's balancer plans with the drained node's shards still
	// its own: none is revoked while the prepare holds.
	for _, s := range moved {
		info, ok := next.C().Table().Shard(s)
		if ok && info.Owner.Node.Name == victim.Name && info.State == coordinator.ShardOwned {
			continue
		}
		if gone := sessionsGone(next.C(), sessions); len(gone) > 0 {
			t.Logf("shard %d: %+v, the sessions of %v ended (the machine stalled past their TTL)", s, info, gone)
			continue
		}
		t.Errorf("shard %d: %+v while the next owner prepares, want owned by %s", s, info, victim.Name)
	}
	close(hold)
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	waitOwned(t, cl, tgt.C(), moved)
	// The table shows the grant before the new owner's handler (the
	// monitor) sees it: wait for the monitor, then count (counting at
	// once failed under load with "granted 0 times").
	m.waitGranted(cl, before, moved)
	defer m.check(t)
	// The moves are planned ones, each granted once, only while both
	// sessions live. On a machine that stalled past the TTL (two suites at
	// once on two cores ended them: raft could not keep a leader), the
	// drained node's shards moved as free ones, rightly without a prepare,
	// and may have moved again.
	perShard, who := m.grantsAfter(before)
	if gone := sessionsGone(tgt.C(), sessions); len(gone) > 0 {
		t.Logf("the sessions of %v ended during the leader change (the machine stalled past their TTL): the moves were not planned ones; only the monitor's invariants are checked in this run", gone)
		return
	}
	for _, s := range moved {
		if perShard[s] != 1 {
			t.Errorf("shard %d granted %d times after the leader change: %v", s, perShard[s], who[s])
		}
	}
	m.checkPreparedMoves(t, cl, tgt.C(), moved, sessions)
}

// TestShardsPrepareShutdown: Shutdown of a node whose peers prepare hands
// every shard off to a node that prepared it, and the audit is clean.
func TestShardsPrepareShutdown(t *testing.T) {
	t.Parallel()
	const shards = 24
	m := newPrepMonitor()
	cl := prepCluster(t, 3, shards, m, 0)
	victim := otherNode(cl, cl.WaitLeader(formTimeout))
	other := otherNode(cl, victim)
	moved := shardsOf(victim.C(), victim.Name)
	sessions := sessionsOf(cl) // the nodes that stay
	delete(sessions, victim.Name)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Stop(ctx, victim.Index); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	waitBalanced(t, cl, shards, formTimeout)
	m.checkPreparedMoves(t, cl, other.C(), moved, sessions)
	m.check(t)
}

// TestShardsPrepareAbandonedOnUndrain: the plan changes while the next
// owner prepares (the drained node is undrained): the prepare is abandoned
// (its context ends with ErrMoveAbandoned) and the old owner keeps every
// shard, none granted again.
func TestShardsPrepareAbandonedOnUndrain(t *testing.T) {
	t.Parallel()
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
	before := m.leaseCounts()
	dctx, stopDrain := context.WithCancel(ctx)
	mark := m.mark()
	drained := make(chan error, 1)
	go func() { drained <- victim.C().Drain(dctx) }()
	m.waitStarted(cl, "", mark)
	stopDrain()
	if err := <-drained; !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain: %v, want it cancelled", err)
	}
	if err := victim.C().Undrain(ctx); err != nil {
		t.Fatalf("Undrain: %v", err)
	}
	cl.WaitFor("the prepares abandoned", formTimeout, func() error {
		if n, all := m.abandonedSince(mark); n == 0 || !all {
			return fmt.Errorf("%w: %d abandoned", holdfasttest.ErrNotYet, n)
		}
		return nil
	})
	for _, s := range owned {
		if info, ok := victim.C().Table().Shard(s); !ok || info.Owner.Node.Name != victim.Name || info.State != coordinator.ShardOwned {
			t.Errorf("shard %d: %+v after the undrain, want owned by %s", s, info, victim.Name)
		}
	}
	if n, who := m.grantsAfter(before); len(n) != 0 {
		t.Errorf("grants after the drain began, want none: %v", who)
	}
	m.check(t)
}

// drainFollowerChecked drains a node that is not the raft leader and
// checks that each of its shards moved through a prepare, with no two
// nodes believing one shard at once.
func drainFollowerChecked(t *testing.T, cl *holdfasttest.Cluster, m *prepMonitor) {
	t.Helper()
	victim := otherNode(cl, cl.WaitLeader(formTimeout))
	moved := shardsOf(victim.C(), victim.Name)
	sessions := sessionsOf(cl)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := victim.C().Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	m.checkPreparedMoves(t, cl, victim.C(), moved, sessions)
	m.check(t)
}
