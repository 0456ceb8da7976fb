package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShardsBalancedAndJoin: 5 nodes on loopback TCP own 256 shards,
// balanced; a sixth node joins and receives about S/6 shards, no more than
// 1.1 × ceil(S/6) moves, and no two nodes ever believe they own the same
// shard at once. The bound on moves is about the join alone: when a node's
// session ends meanwhile (a process starved of CPU for longer than its
// keepalives allow), its shards move too, and the run says so instead of
// judging the bound.
func TestShardsBalancedAndJoin(t *testing.T) {
	const shards = 256
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	counts := waitBalanced(t, cl, shards, formTimeout)
	t.Logf("5 nodes: %v after %d grants", counts, mon.grants())
	// Let every session become stable, so the join is a join into a
	// settled cluster (the newcomer waits out its own stabilization).
	waitStable(cl)
	sessions := sessionsOf(cl)
	joined := time.Now()
	cl.Add()
	counts = waitBalanced(t, cl, shards, formTimeout)
	moves, perShard := mon.grantsSince(joined)
	bound := 1.1 * math.Ceil(shards/6.0)
	t.Logf("6 nodes: %v; %d moves after the join (bound %.1f)", counts, moves, bound)
	if ended := endedSince(cl, sessions); len(ended) > 0 {
		t.Logf("the sessions of %v ended during the join, and their shards moved with them: the bound on moves does not apply to this run", ended)
		perShard = nil
	} else if float64(moves) > bound {
		t.Errorf("%d shards moved after one join, want at most %.1f", moves, bound)
	}
	for s, n := range perShard {
		if n > 1 {
			t.Errorf("shard %d moved %d times after one join", s, n)
		}
	}
	gap := mon.check(t)
	t.Logf("longest time a shard was unowned between two owners: %v", gap)
}

// sessionsOf returns each running node's session ID, by node name.
func sessionsOf(cl *holdfasttest.Cluster) map[string]string {
	out := map[string]string{}
	for _, n := range cl.Running() {
		out[n.Name] = n.C().SessionID()
	}
	return out
}

// endedSince names the nodes of before whose session is no longer their
// current one.
func endedSince(cl *holdfasttest.Cluster, before map[string]string) []string {
	var ended []string
	for _, n := range cl.Running() {
		if id, ok := before[n.Name]; ok && n.C().SessionID() != id {
			ended = append(ended, n.Name)
		}
	}
	return ended
}

// waitStable waits out the join stabilization of every running node's
// session.
func waitStable(cl *holdfasttest.Cluster) {
	d := cl.Node(0).Config.Shards.JoinStabilization
	deadline := time.Now().Add(d + 100*time.Millisecond)
	_ = holdfasttest.Poll(d+time.Second, func() error {
		if time.Now().Before(deadline) {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
}

// TestShardsAPI checks Owner, ShardFor, Owned, Watch, Drain and Undrain on
// the in-memory network.
func TestShardsAPI(t *testing.T) {
	t.Parallel()
	const shards = 16
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.ServiceAddr = fmt.Sprintf("svc%d:80", i)
	}})
	cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 2*formTimeout)
	defer cancel()
	watch := cl.Node(2).C().Watch(ctx)
	waitBalanced(t, cl, shards, formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	if k := a.ShardFor([]byte("user:42")); k != b.ShardFor([]byte("user:42")) || int(k) >= shards || a.Shards() != shards {
		t.Fatalf("ShardFor disagrees or out of range: %d %d", k, b.ShardFor([]byte("user:42")))
	}
	// node1's replica answers Owner: Sync first, so that it has applied
	// every grant committed before node0's shards were read.
	owned := a.Owned()
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range owned {
		o, ok := b.Owner(l.Shard())
		if !ok || o.Node.Name != a.NodeName() || o.Token != l.Token() || o.Addr != "svc0:80" || o.Node.ID != a.ID() {
			t.Fatalf("node1 sees shard %d as %+v, node0 holds token %d", l.Shard(), o, l.Token())
		}
		if err := l.Checkpoint(); err != nil || l.Remaining() <= 0 {
			t.Fatalf("fresh shard lease: checkpoint %v, remaining %v", err, l.Remaining())
		}
	}
	if _, ok := a.Owner(shards); ok {
		t.Fatal("a shard beyond the count has an owner")
	}
	// Watch delivers a version showing every shard owned.
	waitWatch(t, watch, func(tab *coordinator.ShardTable) bool {
		for s := 0; s < tab.Len(); s++ {
			if _, ok := tab.Owner(coordinator.ShardID(s)); !ok {
				return false
			}
		}
		return tab.Len() == shards
	})
	before := b.Owned()
	if len(before) == 0 {
		t.Fatal("node1 owns nothing")
	}
	if err := b.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.Owned()); n != 0 {
		t.Fatalf("drained node still owns %d shards", n)
	}
	for _, l := range before {
		if !errors.Is(l.Err(), coordinator.ErrRevoked) {
			t.Errorf("drained shard %d ended with %v, want ErrRevoked", l.Shard(), l.Err())
		}
		select {
		case <-l.Revoked():
		default:
			t.Errorf("shard %d: Revoked not closed", l.Shard())
		}
	}
	cl.WaitFor("the drained shards owned by the others with larger tokens", formTimeout, func() error {
		for _, l := range before {
			sh, ok := a.Table().Shard(l.Shard())
			o := sh.Owner
			if !ok || sh.State != coordinator.ShardOwned || o.Node.Name == b.NodeName() || o.Token <= l.Token() {
				return fmt.Errorf("%w: shard %d: %+v", holdfasttest.ErrNotYet, l.Shard(), o)
			}
		}
		return nil
	})
	if err := b.Undrain(ctx); err != nil {
		t.Fatal(err)
	}
	waitBalanced(t, cl, shards, formTimeout)
}

func waitWatch(t *testing.T, ch <-chan *coordinator.ShardTable, ok func(*coordinator.ShardTable) bool) {
	t.Helper()
	timeout := time.NewTimer(formTimeout)
	defer timeout.Stop()
	last := uint64(0)
	for {
		select {
		case tab, open := <-ch:
			if !open {
				t.Fatal("watch closed")
			}
			if tab.Version() < last {
				t.Fatalf("watch went back from version %d to %d", last, tab.Version())
			}
			last = tab.Version()
			if ok(tab) {
				return
			}
		case <-timeout.C:
			t.Fatal("watch never delivered the expected table")
		}
	}
}

// ownedBy returns the shards node name owns in c's replica, with tokens.
func ownedBy(c *coordinator.Coordinator, name string) map[coordinator.ShardID]uint64 {
	out := map[coordinator.ShardID]uint64{}
	for s := 0; s < c.Shards(); s++ {
		if o, ok := c.Owner(coordinator.ShardID(s)); ok && o.Node.Name == name {
			out[coordinator.ShardID(s)] = o.Token
		}
	}
	return out
}

// waitReowned waits until every shard in lost is owned (not revoking) by
// another node than gone with a larger token, and returns how long that
// took from since.
func waitReowned(t *testing.T, cl *holdfasttest.Cluster, observer *coordinator.Coordinator, gone string,
	lost map[coordinator.ShardID]uint64, since time.Time) time.Duration {
	t.Helper()
	var took time.Duration
	cl.WaitFor("the lost shards owned again", formTimeout, func() error {
		for s, tok := range lost {
			sh, ok := observer.Table().Shard(s)
			o := sh.Owner
			if !ok || sh.State != coordinator.ShardOwned || o.Node.Name == gone || o.Token <= tok {
				return fmt.Errorf("%w: shard %d: %+v", holdfasttest.ErrNotYet, s, o)
			}
		}
		took = time.Since(since)
		return nil
	})
	return took
}

// TestShardsCrashedOwnerReowned kills an owner (a follower, then the raft
// leader) without a goodbye: its shards are owned again within TTL +
// grace + 2 s, with larger tokens. The bound counts from the crash, or
// from the latest takeover of a leader's lessor after it: a new leader
// gives every session TTL + grace from its takeover (lease rule 3 in
// docs/ARCHITECTURE.md), and on a loaded host the election after a leader
// crash can be followed by another one (as TestChaos counts I6).
func TestShardsCrashedOwnerReowned(t *testing.T) {
	const shards = 32
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	leader := cl.WaitFormed(formTimeout)
	var lastTakeover atomic.Pointer[time.Time]
	for _, n := range cl.Running() {
		n.C().SetLessorHooks(func(at time.Time) {
			for old := lastTakeover.Load(); old == nil || at.After(*old); old = lastTakeover.Load() {
				if lastTakeover.CompareAndSwap(old, &at) {
					return
				}
			}
		}, nil)
	}
	waitBalanced(t, cl, shards, formTimeout)
	cfg := leader.Config
	bound := cfg.Session.TTL + cfg.Session.ExpiryGrace + 2*time.Second
	for _, victimIsLeader := range []bool{false, true} {
		leader = cl.WaitLeader(formTimeout)
		victim := leader
		for _, n := range cl.Running() {
			if !victimIsLeader && n != leader {
				victim = n
				break
			}
		}
		observer := cl.Running()[0]
		if observer == victim {
			observer = cl.Running()[1]
		}
		lost := ownedBy(observer.C(), victim.Name)
		killed := time.Now()
		cl.Kill(victim.Index)
		took := waitReowned(t, cl, observer.C(), victim.Name, lost, killed)
		from := killed
		if at := lastTakeover.Load(); at != nil && at.After(from) && at.Before(killed.Add(took)) {
			from = *at
		}
		counted := killed.Add(took).Sub(from)
		t.Logf("raft leader %v: %d shards of %s owned again %v after the crash, %v after the last lessor takeover since (bound %v)",
			victimIsLeader, len(lost), victim.Name, took.Round(time.Millisecond), counted.Round(time.Millisecond), bound)
		if counted > bound {
			t.Errorf("shards owned again %v after the crash and %v after the last lessor takeover, want within TTL + grace + 2s = %v",
				took, counted, bound)
		}
		waitBalanced(t, cl, shards, formTimeout)
		// Before the next crash, autopilot must have replaced the dead voter.
		waitSuffrages(t, cl, 3, len(cl.Running())-3)
	}
	mon.check(t)
}

// TestShardsGracefulShutdown stops owners gracefully (a follower, then, once
// the configuration is back to 3 voters without it, the raft leader): their
// shards move with no overlap, and no shard is unowned for as long as an
// expiry would have taken (the drain itself runs while the old owner still
// holds the shard).
func TestShardsGracefulShutdown(t *testing.T) {
	const shards = 64
	mon := newShardMonitor()
	mon.drain = 100 * time.Millisecond
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	// The bound tells a hand-off from an expiry, not speed: a shard whose
	// owner crashed waits a session TTL at least before it is granted
	// again; a graceful one waits for a few commits (about 100 ms on a
	// quiet machine), or for a new leader to hear every session (under a
	// TTL) when the leader stops.
	bound := coordinator.DefaultLocalConfig().Session.TTL
	for _, victimIsLeader := range []bool{false, true} {
		leader := cl.WaitLeader(formTimeout)
		victim := leader
		for _, n := range cl.Running() {
			if !victimIsLeader && n != leader {
				victim = n
				break
			}
		}
		stopped := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		if err := cl.Stop(ctx, victim.Index); err != nil {
			t.Errorf("Shutdown of %s: %v", victim.Name, err)
		}
		cancel()
		t.Logf("Shutdown of %s (raft leader %v) took %v", victim.Name, victimIsLeader, time.Since(stopped).Round(time.Millisecond))
		waitBalanced(t, cl, shards, formTimeout)
		// A stopped voter keeps its vote: before the next node stops, the
		// dead-voter rule must have replaced it (a non-voter takes itself
		// out at once), so that the leader's stop leaves a quorum.
		waitSuffrages(t, cl, 3, len(cl.Running())-3)
	}
	gap := mon.check(t)
	t.Logf("longest time a shard was unowned between two owners: %v (bound %v)", gap, bound)
	if gap > bound {
		t.Errorf("a shard was unowned for %v, want at most %v", gap, bound)
	}
}
