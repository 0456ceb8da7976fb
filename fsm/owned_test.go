package fsm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// ownedFromTable lists each session's shards by scanning the table: what
// the owned index must say.
func ownedFromTable(v *View) map[string][]uint32 {
	out := map[string][]uint32{}
	v.EachShard(func(s Shard) bool {
		if s.State != ShardFree {
			out[s.Owner] = append(out[s.Owner], s.ID)
		}
		return true
	})
	return out
}

// checkOwned fails unless v's owned index lists exactly the shards each
// session owns in v's table, with no empty set left behind.
func checkOwned(t *testing.T, what string, v *View) {
	t.Helper()
	want := ownedFromTable(v)
	if len(v.st.owned) != len(want) {
		t.Fatalf("%s: owned index has %d sessions, the table %d", what, len(v.st.owned), len(want))
	}
	for _, r := range v.st.owned {
		session, set := r.id, r.set
		if set.gen != 0 || set.from != nil {
			t.Fatalf("%s: session %s: a published set is marked as a command's (gen %d)", what, session, set.gen)
		}
		var got []uint32
		set.each(func(id uint32) { got = append(got, id) })
		if !slices.Equal(got, want[session]) || set.count != len(got) {
			t.Fatalf("%s: session %s: index %v (count %d), table %v", what, session, got, set.count, want[session])
		}
	}
}

// TestOwnedIndexRandom checks, over seeded random shard histories with
// grants, releases, drains and session ends, that the owned index behind a
// session's end matches the table after every command, that earlier views
// keep theirs (copy-on-write), and that a restored replica rebuilds it.
func TestOwnedIndexRandom(t *testing.T) {
	for seed := uint64(1); seed <= randomSeeds(60); seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		a := &applier{t: t, f: New()}
		// Past one chunk of the index, so sets span several.
		a.do(initCluster(uint32(1 + rng.IntN(3*ownedChunkShards))))
		var views []*View
		for i := 0; i < 300; i++ {
			c := randomShardCommand(rng, a.f.View(), i)
			if c.Op == OpShardGrant && rng.IntN(2) == 0 { // many shards at once
				for range 200 {
					c.Shard.Items = append(c.Shard.Items, ShardItem{Shard: uint32(rng.IntN(a.f.View().ShardCount())),
						Session: c.Shard.Items[0].Session})
				}
			}
			a.do(c)
			checkOwned(t, "live", a.f.View())
			views = append(views, a.f.View())
		}
		for i, v := range views {
			checkOwned(t, "earlier view", v)
			if i == len(views)-1 {
				checkOwned(t, "restored", a.restoredCopy().f.View())
			}
		}
	}
}

// TestSessionEndFreesItsShards checks that a session's end frees exactly
// its shards, also those granted before a drain and those revoking, and
// leaves the others' shards alone.
func TestSessionEndFreesItsShards(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(3000))
	a.do(createSession("a"))
	a.do(createSession("b"))
	var items []ShardItem
	for s := range uint32(3000) {
		items = append(items, ShardItem{Shard: s, Session: []string{"a", "b"}[s%7/5]})
	}
	a.doShards(OpShardGrant, ShardCmd{Items: items})
	a.do(Command{Op: OpSessionDrain, Session: &SessionCmd{ID: "a", Drain: true}})
	sh, _ := a.f.View().Shard(2999)
	a.do(shardCmd(OpShardRevoke, false, ShardItem{Shard: 2999, Session: sh.Owner, Token: sh.Token, To: "b"}))
	before := a.f.View()
	a.do(Command{Op: OpSessionClose, Session: &SessionCmd{ID: "a"}})
	v := a.f.View()
	for s := range uint32(3000) {
		was, _ := before.Shard(s)
		now, _ := v.Shard(s)
		switch {
		case was.Owner == "a" && (now.State != ShardFree || now.Token != was.Token):
			t.Fatalf("shard %d of a: %+v after a's end", s, now)
		case was.Owner == "b" && now != was:
			t.Fatalf("shard %d of b: %+v, was %+v", s, now, was)
		}
	}
	checkOwned(t, "after the end", v)
	if v.st.owned.get("a") != nil {
		t.Fatal("the ended session keeps an owned set")
	}
}

// randomSeeds is how many seeds a seeded property test runs: n, or an
// eighth of n (at least 2) under the race detector (see raceEnabled).
func randomSeeds(n uint64) uint64 {
	if raceEnabled {
		return max(n/8, 2)
	}
	return n
}
