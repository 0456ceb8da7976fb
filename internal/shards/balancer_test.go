package shards

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/fsm"
)

const ttl = 10 * time.Second

// observer records observed values.
type observer struct {
	mu   sync.Mutex
	vals []float64
}

func (o *observer) Observe(v float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.vals = append(o.vals, v)
}

func (o *observer) n() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.vals)
}

// balancerRig is a balancer over a fake replica, with a clock the test
// moves by passing instants to Round.
type balancerRig struct {
	*replica
	o        BalancerOptions
	b        *Balancer
	forced   prometheus.Counter
	handoffs prometheus.Counter
	duration *observer
	now      time.Time
	expiring map[string]bool
}

func newBalancerRig(t *testing.T, shards int, o BalancerOptions) *balancerRig {
	rig := &balancerRig{replica: newReplica(t, shards), now: time.Unix(1_000_000, 0), expiring: map[string]bool{},
		duration: &observer{}}
	m := NewMetrics(nil)
	m.handoffDuration = rig.duration
	rig.forced, rig.handoffs = m.forced, m.handoffs
	o.View, o.Apply = rig.view, rig.apply
	o.Now = func() time.Time { return rig.now }
	o.Expiring = func(s string, _ time.Time) bool { return rig.expiring[s] }
	o.Metrics = m
	o.SessionTTL, o.ExpiryGrace = ttl, 3*time.Second
	o.ReconcileInterval = time.Hour
	if o.Epsilon == 0 {
		o.Epsilon = 1e-9 // no slack: the expected counts are exact
	}
	rig.o = o
	return rig
}

func (rig *balancerRig) start() { rig.b = NewBalancer(rig.o) }

// round runs a round at rig.now+d (moving the clock there).
func (rig *balancerRig) round(d time.Duration, first bool) time.Time {
	rig.now = rig.now.Add(d)
	return rig.b.Round(context.Background(), rig.view(), rig.now, first)
}

func all(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// TestRevokedShardForcedOnlyAfterDeadline: a revoked shard whose owner does
// not release it is forced free a full TTL after the balancer saw the
// revoke, not a moment earlier, and then goes to its new owner.
func TestRevokedShardForcedOnlyAfterDeadline(t *testing.T) {
	rig := newBalancerRig(t, 8, BalancerOptions{MaxMoves: 8})
	rig.session("a", ttl, false)
	rig.session("b", ttl, false)
	rig.grant("a", all(8)...)
	rig.start()
	rig.round(0, true)
	k := len(revokingShards(rig.view()))
	if _, rev, _ := count(rig.view()); k == 0 || rev["a"] != k {
		t.Fatalf("after the first round: %s; want some of a's shards revoking", describe(rig.view()))
	}
	wake := rig.round(time.Millisecond, false) // the revokes are seen now
	if want := rig.now.Add(ttl); !wake.Equal(want) {
		t.Fatalf("next round due at %v, want the forced-release deadline %v", wake.Sub(rig.now), ttl)
	}
	rig.round(ttl-time.Millisecond, false)
	if _, rev, _ := count(rig.view()); rev["a"] != k || testutil.ToFloat64(rig.forced) != 0 {
		t.Fatalf("1ms before the deadline: %s, %v forced; want them still revoking, none forced",
			describe(rig.view()), testutil.ToFloat64(rig.forced))
	}
	rig.round(time.Millisecond, false)
	if _, rev, free := count(rig.view()); testutil.ToFloat64(rig.forced) != float64(k) || len(rev) != 0 || free != k {
		t.Fatalf("at the deadline: %s, %v forced; want %d forced free", describe(rig.view()), testutil.ToFloat64(rig.forced), k)
	}
	rig.round(time.Millisecond, false) // the round the release's commit wakes
	if owned, _, _ := count(rig.view()); owned["a"] != 8-k || owned["b"] != k {
		t.Fatalf("after the forced release: %s; want the %d shards granted to b", describe(rig.view()), k)
	}
}

// TestInheritedRevokeGetsExpiryGrace: a revoke found in the first round of a
// leader term (made by an earlier leader, whose keepalive answers may have
// extended the owner's belief) is forced only after TTL + ExpiryGrace.
func TestInheritedRevokeGetsExpiryGrace(t *testing.T) {
	rig := newBalancerRig(t, 4, BalancerOptions{})
	rig.session("a", ttl, false)
	rig.grant("a", all(4)...)
	rig.revoke(2)
	rig.start()
	if wake := rig.round(0, true); !wake.Equal(rig.now.Add(ttl + 3*time.Second)) {
		t.Fatalf("next round due in %v, want TTL + grace", wake.Sub(rig.now))
	}
	rig.round(ttl, false)
	if got := revokingShards(rig.view()); len(got) != 1 || testutil.ToFloat64(rig.forced) != 0 {
		t.Fatalf("a TTL after: %s; want shard 2 still revoking", describe(rig.view()))
	}
	rig.round(3*time.Second, false)
	if testutil.ToFloat64(rig.forced) != 1 {
		t.Fatalf("TTL + grace after: %s, %v forced; want 1", describe(rig.view()), testutil.ToFloat64(rig.forced))
	}
}

// TestEarlyHandoffGrantedAtOnce: a revoked shard its owner releases goes to
// the next owner in the next round, long before any forced release, and
// the handoff's duration is observed.
func TestEarlyHandoffGrantedAtOnce(t *testing.T) {
	rig := newBalancerRig(t, 2, BalancerOptions{})
	rig.session("a", ttl, false)
	rig.session("b", ttl, false)
	rig.grant("a", 0, 1)
	rig.start()
	rig.round(0, true)
	rev := revokingShards(rig.view())
	if len(rev) != 1 {
		t.Fatalf("after the first round: %s; want one shard revoking", describe(rig.view()))
	}
	rig.round(time.Millisecond, false)
	rig.now = rig.now.Add(time.Second)
	rig.release(rev[0])
	rig.round(0, false)
	sh, _ := rig.view().Shard(rev[0])
	if sh.State != fsm.ShardOwned || sh.Owner != "b" {
		t.Fatalf("released shard: %+v; want owned by b", sh)
	}
	if testutil.ToFloat64(rig.forced) != 0 || testutil.ToFloat64(rig.handoffs) != 1 || rig.duration.n() != 1 {
		t.Fatalf("forced %v, handoffs %v, durations %d; want 0, 1, 1",
			testutil.ToFloat64(rig.forced), testutil.ToFloat64(rig.handoffs), rig.duration.n())
	}
}

// TestMovesPerRoundLimited: no more rebalancing handoffs are in flight than
// MaxMoves (0: max(1, shards/16)); a completed one makes room for the next.
func TestMovesPerRoundLimited(t *testing.T) {
	for _, tc := range []struct {
		maxMoves, shards, want int
	}{{3, 32, 3}, {0, 32, 2}, {0, 8, 1}} {
		rig := newBalancerRig(t, tc.shards, BalancerOptions{MaxMoves: tc.maxMoves})
		rig.session("a", ttl, false)
		rig.session("b", ttl, false)
		rig.grant("a", all(tc.shards)...)
		rig.start()
		rig.round(0, true)
		if got := len(revokingShards(rig.view())); got != tc.want {
			t.Fatalf("MaxMoves %d, %d shards: %d revoking after a round, want %d", tc.maxMoves, tc.shards, got, tc.want)
		}
		rig.round(time.Millisecond, false)
		rev := revokingShards(rig.view())
		if len(rev) != tc.want {
			t.Fatalf("MaxMoves %d: %d revoking after a second round, want still %d", tc.maxMoves, len(rev), tc.want)
		}
		rig.release(rev[0])
		rig.round(time.Millisecond, false) // grants the released shard, revokes one more
		owned, _, _ := count(rig.view())
		if got := len(revokingShards(rig.view())); got != tc.want || owned["b"] != 1 {
			t.Fatalf("MaxMoves %d after one handoff: %s; want %d revoking, b owning 1", tc.maxMoves, describe(rig.view()), tc.want)
		}
	}
}

// TestNewMemberStabilizes: a session that appears during a term gets no
// shard moved to it until it has been seen for JoinStabilization; sessions
// present at the term's first round count as stable.
func TestNewMemberStabilizes(t *testing.T) {
	const stab = 30 * time.Second
	rig := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: stab, MaxMoves: 8})
	rig.session("a", ttl, false)
	rig.grant("a", all(8)...)
	rig.start()
	rig.round(0, true)
	rig.session("b", ttl, false)
	if wake := rig.round(time.Second, false); !wake.Equal(rig.now.Add(stab)) {
		t.Fatalf("next round due in %v, want when b becomes stable (%v)", wake.Sub(rig.now), stab)
	}
	if rev := revokingShards(rig.view()); len(rev) != 0 {
		t.Fatalf("b just joined: %s; want no revoke", describe(rig.view()))
	}
	rig.round(stab-time.Millisecond, false)
	if rev := revokingShards(rig.view()); len(rev) != 0 {
		t.Fatalf("1ms before b is stable: %s; want no revoke", describe(rig.view()))
	}
	rig.round(time.Millisecond, false)
	if _, rev, _ := count(rig.view()); rev["a"] == 0 {
		t.Fatalf("b stable: %s; want a's shards revoking", describe(rig.view()))
	}

	// A session already present when a term starts counts as stable.
	rig2 := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: stab, MaxMoves: 8})
	rig2.session("a", ttl, false)
	rig2.session("b", ttl, false)
	rig2.grant("a", all(8)...)
	rig2.start()
	rig2.round(0, true)
	if _, rev, _ := count(rig2.view()); rev["a"] == 0 {
		t.Fatalf("b present at the term's start: %s; want a's shards revoking", describe(rig2.view()))
	}
}

// TestDrainedAndExpiringGetNothing: drained and expiring sessions get no
// shard; a drained owner gives its shards up at once, beyond MaxMoves and
// even when nobody can take them.
func TestDrainedAndExpiringGetNothing(t *testing.T) {
	rig := newBalancerRig(t, 12, BalancerOptions{MaxMoves: 1})
	rig.session("a", ttl, false)
	rig.grant("a", 0, 1, 2, 3)
	rig.drain("a") // drained, owns 0-3
	rig.session("b", ttl, false)
	rig.session("c", ttl, true)  // drained, owns nothing
	rig.session("d", ttl, false) // expiring
	rig.expiring["d"] = true
	rig.start()
	rig.round(0, true)
	owned, rev, free := count(rig.view())
	if owned["b"] != 8 || rev["a"] != 4 || owned["c"] != 0 || owned["d"] != 0 || free != 0 {
		t.Fatalf("%s; want b owning the 8 free shards and a's 4 revoking", describe(rig.view()))
	}

	alone := newBalancerRig(t, 4, BalancerOptions{MaxMoves: 1})
	alone.session("a", ttl, false)
	alone.grant("a", all(4)...)
	alone.drain("a")
	alone.start()
	alone.round(0, true)
	if _, rev, _ := count(alone.view()); rev["a"] != 4 {
		t.Fatalf("a drained alone: %s; want all 4 revoking", describe(alone.view()))
	}
}

// TestBalancerRunStops: Run plans at once and returns when its context
// ends.
func TestBalancerRunStops(t *testing.T) {
	r := newReplica(t, 4)
	r.session("a", ttl, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewBalancer(BalancerOptions{View: r.view, Apply: r.apply, ReconcileInterval: time.Hour}).Run(ctx)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if owned, _, _ := count(r.view()); owned["a"] == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run granted nothing in 10s: %s", describe(r.view()))
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	cancel()
	<-done
}

// TestFormationWaveStaysEligible: sessions that all appear after a term
// began (a cluster forming) get no shard while the membership grows (the
// newest session younger than JoinStabilization, here longer than the
// TTL), and all of them at once SessionTTL after the first appeared,
// though none is stable yet; they stay eligible from then on, so a session
// that joins a moment later (a node restarted right after formation) waits
// out JoinStabilization like any newcomer instead of being eligible until
// the first ones turn stable and then not (which sent shards its way and
// then elsewhere).
func TestFormationWaveStaysEligible(t *testing.T) {
	const stab = 30 * time.Second
	rig := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: stab, MaxMoves: 8})
	rig.start()
	rig.round(0, true) // the term's first round: no session yet
	rig.session("a", ttl, false)
	rig.round(time.Second, false)
	rig.session("b", ttl, false)
	if next := rig.round(time.Second, false); len(revokingShards(rig.view())) != 0 || !next.Equal(rig.now.Add(ttl-time.Second)) {
		t.Fatalf("membership growing: %s, next round at %v; want nothing owned, the next round when a's TTL from its start is up", describe(rig.view()), next)
	}
	if owned, _, free := count(rig.view()); len(owned) != 0 || free != 8 {
		t.Fatalf("membership growing: %s; want every shard free", describe(rig.view()))
	}
	rig.round(ttl-2*time.Second, false) // a second before the wait ends
	if _, _, free := count(rig.view()); free != 8 {
		t.Fatalf("a second before the wait ends: %s; want every shard free", describe(rig.view()))
	}
	rig.round(time.Second, false)
	if owned, _, free := count(rig.view()); owned["a"] != 4 || owned["b"] != 4 || free != 0 {
		t.Fatalf("formation: %s; want a and b 4 shards each", describe(rig.view()))
	}
	rig.session("c", ttl, false)
	rig.round(time.Second, false)
	if _, rev, _ := count(rig.view()); rev["a"]+rev["b"] != 0 {
		t.Fatalf("c just joined after formation: %s; want no revoke before c is stable", describe(rig.view()))
	}
	rig.round(stab-time.Second, false) // a and b would have turned stable now, c not yet
	if _, rev, _ := count(rig.view()); rev["a"]+rev["b"] != 0 {
		t.Fatalf("1s before c is stable: %s; want no revoke", describe(rig.view()))
	}
	rig.round(time.Second, false)
	if _, rev, _ := count(rig.view()); rev["a"]+rev["b"] == 0 {
		t.Fatalf("c stable: %s; want shards revoking towards c", describe(rig.view()))
	}
}
