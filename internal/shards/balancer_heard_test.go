package shards

import (
	"testing"
	"time"
)

// TestUnheardSessionGetsNoShards: a session this leader has heard no
// keepalive from (a create that committed after its caller gave up, or a
// session an earlier leader knew) is given no shard, however long ago it
// was created and even when it is the only session; once heard from it is
// given its share at once. An unheard owner keeps what it owns: a new
// leader does not take shards from sessions whose first keepalive has not
// arrived yet.
func TestUnheardSessionGetsNoShards(t *testing.T) {
	heard := map[string]bool{}
	rig := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: time.Second, MaxMoves: 8})
	rig.o.Heard = func(s string) bool { return heard[s] }
	rig.session("owner", ttl, false)
	rig.grant("owner", 0, 1, 2, 3)
	rig.session("orphan", ttl, false)
	rig.start()
	rig.round(0, true)
	rig.round(10*time.Second, false)
	if owned, rev, free := count(rig.view()); owned["owner"] != 4 || owned["orphan"] != 0 || len(rev) != 0 || free != 4 {
		t.Fatalf("nobody heard from: %s; want the owner's 4 kept, nothing granted", describe(rig.view()))
	}
	heard["owner"] = true
	rig.round(time.Millisecond, false)
	if owned, _, _ := count(rig.view()); owned["owner"] != 8 || owned["orphan"] != 0 {
		t.Fatalf("the owner heard from: %s; want every shard its own, none the orphan's", describe(rig.view()))
	}
	heard["orphan"] = true // its node is alive after all
	rig.round(time.Millisecond, false)
	rig.round(time.Millisecond, false)
	if _, rev, _ := count(rig.view()); rev["owner"] == 0 {
		t.Fatalf("the second session heard from: %s; want shards moving to it", describe(rig.view()))
	}
}

// TestNewLeaderWaitsForInheritedSessions: a new leader plans nothing while
// a session it found at its first round has not been heard from (planning
// then would give the shards that move to whoever was heard first, and
// move them again), for at most a TTL; a session appearing later is only
// held, and does not stop planning.
func TestNewLeaderWaitsForInheritedSessions(t *testing.T) {
	heard := map[string]bool{"a": true}
	rig := newBalancerRig(t, 8, BalancerOptions{MaxMoves: 8})
	rig.o.Heard = func(s string) bool { return heard[s] }
	rig.session("a", ttl, false)
	rig.session("b", ttl, false)
	rig.grant("a", 0, 1, 2, 3)
	rig.start()
	if wake := rig.round(0, true); !wake.Equal(rig.now.Add(ttl)) {
		t.Fatalf("next round due in %v, want the TTL bound", wake.Sub(rig.now))
	}
	if owned, _, free := count(rig.view()); owned["a"] != 4 || free != 4 {
		t.Fatalf("while b is not heard from: %s; want nothing planned", describe(rig.view()))
	}
	heard["b"] = true
	rig.round(time.Millisecond, false)
	if owned, _, _ := count(rig.view()); owned["a"] != 4 || owned["b"] != 4 {
		t.Fatalf("both heard from: %s; want the free shards to b", describe(rig.view()))
	}
	rig.session("late", ttl, false) // a session of this term, never heard from
	rig.release(0)
	rig.round(time.Millisecond, false)
	if owned, _, _ := count(rig.view()); owned["late"] != 0 || owned["a"]+owned["b"] != 8 {
		t.Fatalf("with an unheard session of this term: %s; want shard 0 granted to a heard one", describe(rig.view()))
	}

	// A session never heard from stops planning for a TTL at most.
	rig2 := newBalancerRig(t, 4, BalancerOptions{})
	rig2.o.Heard = func(s string) bool { return s == "live" }
	rig2.session("live", ttl, false)
	rig2.session("gone", ttl, false)
	rig2.start()
	rig2.round(0, true)
	rig2.round(ttl-time.Millisecond, false)
	if owned, _, _ := count(rig2.view()); owned["live"] != 0 {
		t.Fatalf("before the TTL: %s; want nothing planned", describe(rig2.view()))
	}
	rig2.round(time.Millisecond, false)
	if owned, _, _ := count(rig2.view()); owned["live"] != 4 || owned["gone"] != 0 {
		t.Fatalf("a TTL after the takeover: %s; want every shard to the live session", describe(rig2.view()))
	}
}

// TestFirstGrantsWaitForTheMembershipToSettle: a table nobody owns gets
// its first grants once no new session has appeared for
// JoinStabilization, over every session then present, instead of going to
// the first session and moving once the others turn stable; a table with
// an owner does not wait for newcomers.
func TestFirstGrantsWaitForTheMembershipToSettle(t *testing.T) {
	const stab = time.Second
	rig := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: stab, MaxMoves: 8})
	rig.start()
	rig.round(0, true) // the term's first round: no session yet
	rig.session("a", ttl, false)
	rig.round(500*time.Millisecond, false)
	rig.session("b", ttl, false)
	if next := rig.round(500*time.Millisecond, false); next.After(rig.now.Add(stab)) {
		t.Fatalf("b just appeared: next round in %v, want JoinStabilization after b at the latest", next.Sub(rig.now))
	}
	if _, _, free := count(rig.view()); free != 8 {
		t.Fatalf("b just appeared: %s; want every shard free", describe(rig.view()))
	}
	rig.round(stab/2, false) // a stable, b not yet: still waiting for b
	if _, _, free := count(rig.view()); free != 8 {
		t.Fatalf("a stable, b not: %s; want every shard free", describe(rig.view()))
	}
	rig.round(stab/2, false)
	if owned, _, free := count(rig.view()); owned["a"] != 4 || owned["b"] != 4 || free != 0 {
		t.Fatalf("no newcomer for JoinStabilization: %s; want a and b 4 shards each", describe(rig.view()))
	}
	// Owned now: a newcomer waits out its own stabilization, and a freed
	// shard goes out at once.
	rig.session("c", ttl, false)
	rig.release(0)
	rig.round(time.Millisecond, false)
	if owned, _, free := count(rig.view()); owned["c"] != 0 || free != 0 {
		t.Fatalf("a freed shard with c new: %s; want it granted at once to a or b", describe(rig.view()))
	}
}
