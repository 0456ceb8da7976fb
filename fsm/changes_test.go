package fsm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// diffShards returns the shards whose entry differs between two views of
// one table, in order.
func diffShards(old, cur *View) []uint32 {
	var out []uint32
	for id := range uint32(cur.ShardCount()) {
		a, _ := old.Shard(id)
		b, _ := cur.Shard(id)
		if a != b {
			out = append(out, id)
		}
	}
	return out
}

// TestShardChangesRandom applies seeded random shard histories and checks
// ShardChanges against a comparison of whole tables: from the previous view
// it lists exactly the shards that changed; from older views (up to 60
// commands back) it lists, in order and once each, every shard that
// changed and only shards some command changed. A replica fed the same log
// answers the same.
func TestShardChangesRandom(t *testing.T) {
	for seed := uint64(1); seed <= randomSeeds(100); seed++ {
		rng := rand.New(rand.NewPCG(seed, 2))
		a, b := &applier{t: t, f: New()}, &applier{t: t, f: New()}
		a.do(initCluster(uint32(1 + rng.IntN(300))))
		b.do(initCluster(a.f.View().Cluster().Shards))
		views := []*View{a.f.View()}
		touched := []map[uint32]bool{{}} // touched[i]: shards changed by the command after views[i]
		for i := 0; i < 300; i++ {
			c := randomShardCommand(rng, a.f.View(), i)
			bPrev := b.f.View().ShardCursor()
			a.do(c)
			b.do(c)
			v := a.f.View()
			prev := views[len(views)-1]
			got, ok := v.ShardChanges(prev.ShardCursor(), nil)
			if want := diffShards(prev, v); !ok || !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d (%s): changes %v %v, want %v", seed, i, c.Op, got, ok, want)
			}
			got2, ok2 := b.f.View().ShardChanges(bPrev, nil)
			if !ok2 || !slices.Equal(got, got2) {
				t.Fatalf("seed %d step %d: replicas list %v and %v", seed, i, got, got2)
			}
			for _, id := range got {
				touched[len(touched)-1][id] = true
			}
			views, touched = append(views, v), append(touched, map[uint32]bool{})
			back := 1 + rng.IntN(min(60, len(views)-1))
			old := views[len(views)-1-back]
			got, ok = v.ShardChanges(old.ShardCursor(), []uint32{7})
			if !ok || got[0] != 7 {
				t.Fatalf("seed %d step %d: %d back: ok %v, buf %v", seed, i, back, ok, got)
			}
			got = got[1:]
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("seed %d step %d: changes not sorted and distinct: %v", seed, i, got)
			}
			for _, id := range diffShards(old, v) {
				if _, found := slices.BinarySearch(got, id); !found {
					t.Fatalf("seed %d step %d: shard %d changed in the last %d commands but is not listed", seed, i, id, back)
				}
			}
			for _, id := range got {
				hit := false
				for j := len(views) - 1 - back; j < len(views)-1; j++ {
					hit = hit || touched[j][id]
				}
				if !hit {
					t.Fatalf("seed %d step %d: shard %d listed but no command changed it", seed, i, id)
				}
			}
		}
	}
}

// TestShardChangesSessionEnd checks that an expiry lists every shard the
// session owned, in order.
func TestShardChangesSessionEnd(t *testing.T) {
	a := largeTable(t, 1000, 4, 300)
	before := a.f.View()
	a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: sessionIDOf(2)}})
	got, ok := a.f.View().ShardChanges(before.ShardCursor(), nil)
	var want []uint32
	for s := uint32(2); s < 1000; s += 4 {
		want = append(want, s)
	}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("changes %v %v, want %v", got, ok, want)
	}
	// A command that changes no shard lists nothing.
	before = a.f.View()
	a.do(acquire(sessionIDOf(1), "l", 1, false))
	if got, ok := a.f.View().ShardChanges(before.ShardCursor(), nil); !ok || len(got) != 0 {
		t.Fatalf("after an acquire: %v %v", got, ok)
	}
}

// TestShardChangesFallBack checks every case in which ShardChanges cannot
// tell and says so: the zero cursor, a cursor from before the table
// existed, from a later view, from before a restore, and one the log no
// longer reaches (too many commands, too many shards, one huge command).
func TestShardChangesFallBack(t *testing.T) {
	a := &applier{t: t, f: New()}
	empty := a.f.View().ShardCursor()
	a.do(createSession("s"))
	beforeInit := a.f.View().ShardCursor()
	a.do(initCluster(8))
	v := a.f.View()
	for name, c := range map[string]ShardCursor{"zero": {}, "empty FSM": empty, "before init": beforeInit} {
		if got, ok := v.ShardChanges(c, []uint32{1}); ok || !slices.Equal(got, []uint32{1}) {
			t.Errorf("%s cursor: %v %v, want the buffer unchanged and false", name, got, ok)
		}
	}
	if got, ok := v.ShardChanges(v.ShardCursor(), nil); !ok || len(got) != 0 {
		t.Fatalf("own cursor: %v %v", got, ok)
	}
	start := v.ShardCursor()
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 3, Session: "s"}))
	if _, ok := v.ShardChanges(a.f.View().ShardCursor(), nil); ok {
		t.Fatal("a cursor from a later view answered")
	}
	// A restored replica starts a new history: cursors of the original
	// are refused, its own are answered.
	r := a.restoredCopy()
	if _, ok := r.f.View().ShardChanges(start, nil); ok {
		t.Fatal("a cursor from before the restore answered")
	}
	rc := r.f.View().ShardCursor()
	sh, _ := r.f.View().Shard(3)
	r.do(shardCmd(OpShardRelease, false, ShardItem{Shard: 3, Session: "s", Token: sh.Token}))
	if got, ok := r.f.View().ShardChanges(rc, nil); !ok || !slices.Equal(got, []uint32{3}) {
		t.Fatalf("restored replica: %v %v", got, ok)
	}
	// Too many commands: grant and release shard 0 until the log drops
	// the first ones.
	for i := 0; i < maxChangeEntries+1; i++ {
		a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "s"}))
		sh, _ := a.f.View().Shard(0)
		a.do(shardCmd(OpShardRelease, false, ShardItem{Shard: 0, Session: "s", Token: sh.Token}))
	}
	if _, ok := a.f.View().ShardChanges(start, nil); ok {
		t.Fatalf("a cursor %d commands back answered", 2*maxChangeEntries+3)
	}
	if l := a.f.View().changes; len(l.entries) != maxChangeEntries || l.dead > len(l.entries) {
		t.Fatalf("log holds %d entries and %d dropped ones", len(l.entries), l.dead)
	}
	recent := a.f.View().ShardCursor()
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 5, Session: "s"}))
	if got, ok := a.f.View().ShardChanges(recent, nil); !ok || !slices.Equal(got, []uint32{5}) {
		t.Fatalf("recent cursor: %v %v", got, ok)
	}
}

// TestShardChangesBoundedIDs checks the bound on the IDs the log keeps: a
// history of big commands drops its oldest ones, and a single command that
// changes more shards than the log keeps restarts it.
func TestShardChangesBoundedIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 70,000-shard table")
	}
	const shards = maxChangedIDs + 4464
	a := &applier{t: t, f: New()}
	a.do(initCluster(shards))
	a.do(createSession("s"))
	start := a.f.View().ShardCursor()
	var items []ShardItem
	for s := range uint32(shards) {
		items = append(items, ShardItem{Shard: s, Session: "s"})
		if len(items) == MaxShardItems || s == shards-1 {
			a.do(shardCmd(OpShardGrant, false, items...))
			items = items[:0]
		}
	}
	if _, ok := a.f.View().ShardChanges(start, nil); ok {
		t.Fatalf("%d changed IDs answered; the log keeps %d", shards, maxChangedIDs)
	}
	if l := a.f.View().changes; l.ids > maxChangedIDs || l.dead > len(l.entries) {
		t.Fatalf("log holds %d IDs (%d dead entries, %d live)", l.ids, l.dead, len(l.entries))
	}
	mid := a.f.View().ShardCursor()
	a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: "s"}})
	if _, ok := a.f.View().ShardChanges(mid, nil); ok {
		t.Fatalf("an expiry of %d shards answered", shards)
	}
	if l := a.f.View().changes; len(l.entries) != 0 || l.from != a.index {
		t.Fatalf("after a huge command the log is %+v", l)
	}
	after := a.f.View().ShardCursor()
	a.do(createSession("t"))
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 9, Session: "t"}))
	if got, ok := a.f.View().ShardChanges(after, nil); !ok || !slices.Equal(got, []uint32{9}) {
		t.Fatalf("after the restart: %v %v", got, ok)
	}
}
