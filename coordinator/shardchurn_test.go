package coordinator_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShardsRollingRestart restarts all 5 nodes one at a time (graceful
// Shutdown, then start with the same data dir): every shard ends owned,
// tokens strictly increase per shard, no two nodes believe the same shard
// at once, and each restart moves each shard at most twice (away from the
// restarted node and back), or three times when the raft leader changed
// during that restart (a new leader plans afresh from what it inherits: a
// shard the old leader placed while the restarted node was away may be
// placed once more). Before each stop every replica has caught up, as an
// operator's rolling restart waits for health.
func TestShardsRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts five nodes")
	}
	const shards = 64
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	for i := range 5 {
		cl.WaitFor("every replica caught up", formTimeout, cl.CaughtUp)
		start := time.Now()
		leader := cl.WaitLeader(formTimeout).Name
		leaders := watchLeaders(cl, leader)
		ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
		if err := cl.Stop(ctx, i); err != nil {
			t.Errorf("Shutdown of node%d: %v", i, err)
		}
		cancel()
		stopped := time.Since(start)
		cl.Start(i)
		cl.WaitFormed(formTimeout)
		formed := time.Since(start)
		waitSuffrages(t, cl, 3, 2)
		suffrages := time.Since(start)
		waitBalanced(t, cl, shards, formTimeout)
		t.Logf("restart of node%d (raft leader before: %s): stopped +%v, formed +%v, suffrages +%v, balanced +%v",
			i, leader, stopped.Round(time.Millisecond), formed.Round(time.Millisecond),
			suffrages.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		seen := leaders()
		bound := 2
		if len(seen) > 1 {
			bound = 3
		}
		moves, perShard := mon.grantsSince(start)
		most := 0
		for s, n := range perShard {
			most = max(most, n)
			if n > bound {
				t.Errorf("restart of node%d moved shard %d %d times (raft leaders meanwhile %v): %s", i, s, n, seen, mon.historySince(s, start))
			}
		}
		t.Logf("restart of node%d: %d moves, at most %d per shard (raft leaders %v), %v", i, moves, most, seen, time.Since(start).Round(time.Millisecond))
	}
	gap := mon.check(t)
	t.Logf("longest time a shard was unowned between two owners: %v", gap)
}

// TestShardsGossipFlapping mutes one voter's gossip for 2 s out of every
// 4 s for 30 s on the in-memory network (raft and RPC keep flowing, so its
// session lives): shards do not follow gossip, so the number of moves stays
// bounded, and autopilot never takes the voters below a quorum.
func TestShardsGossipFlapping(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("flaps gossip for 30 s")
	}
	const shards = 64
	mon := newShardMonitor()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 5, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		mon.configure(i, c)
	}})
	leader := cl.WaitFormed(formTimeout)
	waitSuffrages(t, cl, 3, 2)
	waitBalanced(t, cl, shards, formTimeout)
	flapper := -1
	for _, n := range cl.Running() {
		for _, m := range leader.C().Members() {
			if m.Name == n.Name && m.Suffrage == coordinator.SuffrageVoter && n != leader {
				flapper = n.Index
			}
		}
	}
	sessions := sessionsOf(cl)
	start := time.Now()
	end := start.Add(30 * time.Second)
	for muted := false; time.Now().Before(end); muted = !muted {
		if muted {
			cl.UnmuteGossip(flapper)
		} else {
			cl.MuteGossip(flapper)
		}
		tick := time.NewTimer(2 * time.Second)
		<-tick.C // the fault schedule itself: one toggle every 2 s
	}
	cl.UnmuteGossip(flapper)
	// Wait on raft, not gossip: memberlist may take a push/pull round or
	// more to show a node it declared dead as alive again everywhere, and
	// shards do not depend on it.
	cl.WaitLeader(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	moves, perShard := mon.grantsSince(start)
	// The flapper's session never depends on gossip, and autopilot keeps a
	// voter whose keepalives reach the leader, so no shard needs to move.
	// The bound allows one lost session (a stall of the loaded machine),
	// or as many as ended (a machine stalled past the TTL more than once):
	// each one's shards away and back.
	ended := endedSince(cl, sessions)
	share := int(math.Ceil(shards / 5.0 * 1.05))
	bound := 2 * share * max(1, len(ended))
	t.Logf("%d moves in 30 s of flapping (%d shards touched), sessions of %v ended; bound %d", moves, len(perShard), ended, bound)
	if moves > bound {
		t.Errorf("%d shard moves during gossip flapping, want at most %d", moves, bound)
	}
	mon.check(t)
	survivor := cl.WaitLeader(formTimeout)
	cl.Close()
	hist := configHistory(t, survivor.DataDir)
	checkOneVoterChangeAtATime(t, hist, 2)
	t.Logf("voter history: %v", hist)
}

// watchLeaders records, from first (the leader now) until the returned
// function is called, the names of the nodes seen leading (polled, so a term shorter than a poll
// may be missed: a missed change only makes the caller's bound stricter);
// the function stops the watch and returns them in order.
func watchLeaders(cl *holdfasttest.Cluster, first string) func() []string {
	done := make(chan struct{})
	out := make(chan []string)
	go func() {
		seen := []string{first}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if l, err := cl.Leader(); err == nil && seen[len(seen)-1] != l.Name {
				seen = append(seen, l.Name)
			}
			select {
			case <-done:
				out <- seen
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		close(done)
		return <-out
	}
}
