package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func initCluster(shards uint32) Command {
	return Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: "c", Shards: shards, Voters: 3}}
}

func shardCmd(op Op, force bool, items ...ShardItem) Command {
	return Command{Op: op, Shard: &ShardCmd{Force: force, Items: items}}
}

func TestShardGrantRevokeRelease(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(300))
	a.do(createSession("a"))
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "b", Node: "nb", NodeID: "ib", Addr: "b:1", TTLNanos: 1e9}})
	if v := a.f.View(); v.ShardCount() != 300 || len(v.Shards()) != 300 {
		t.Fatalf("shard count %d", v.ShardCount())
	}
	if s, ok := a.f.View().Shard(299); !ok || s.State != ShardFree || s.ID != 299 {
		t.Fatalf("shard 299: %+v %v", s, ok)
	}
	if _, ok := a.f.View().Shard(300); ok {
		t.Fatal("shard 300 exists")
	}
	// Grant 0 and 200 to b, 1 to a; a grant to a missing session is skipped.
	r := a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "b"}, ShardItem{Shard: 200, Session: "b"},
		ShardItem{Shard: 1, Session: "a"}, ShardItem{Shard: 2, Session: "nobody"}))
	if r.Err != nil || r.Count != 3 {
		t.Fatalf("grant: %+v", r)
	}
	v := a.f.View()
	s0, _ := v.Shard(0)
	s200, _ := v.Shard(200)
	if s0.Owner != "b" || s0.OwnerNode != "nb" || s0.OwnerAddr != "b:1" || s0.State != ShardOwned || s200.Token <= s0.Token {
		t.Fatalf("after grant: %+v %+v", s0, s200)
	}
	if v.ShardsIndex() != a.index {
		t.Fatalf("shards index %d, want %d", v.ShardsIndex(), a.index)
	}
	// A grant of an owned shard is skipped.
	if r := a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"})); r.Count != 0 || !r.Noop {
		t.Fatalf("regrant: %+v", r)
	}
	// Revoke with the wrong token is skipped; with the right one it sticks.
	if r := a.do(shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: "b", Token: s0.Token + 1})); r.Count != 0 {
		t.Fatalf("revoke with wrong token: %+v", r)
	}
	a.do(shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: "b", Token: s0.Token, To: "a"}))
	if s, _ := a.f.View().Shard(0); s.State != ShardRevoking || s.To != "a" || s.Revoked != a.index {
		t.Fatalf("after revoke: %+v", s)
	}
	// A forced release of an owned (not revoking) shard is skipped.
	if r := a.do(shardCmd(OpShardRelease, true, ShardItem{Shard: 200, Session: "b", Token: s200.Token})); r.Count != 0 {
		t.Fatalf("forced release of an owned shard: %+v", r)
	}
	if r := a.do(shardCmd(OpShardRelease, false, ShardItem{Shard: 0, Session: "b", Token: s0.Token})); r.Count != 1 {
		t.Fatalf("release: %+v", r)
	}
	if s, _ := a.f.View().Shard(0); s.State != ShardFree || s.Owner != "" || s.Token != s0.Token {
		t.Fatalf("after release: %+v", s)
	}
	// The regrant takes a larger token.
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"}))
	if s, _ := a.f.View().Shard(0); s.Token <= s200.Token {
		t.Fatalf("regrant token %d not above %d", s.Token, s200.Token)
	}
	// Ending b's session frees its shard 200 at once.
	a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: "b"}})
	if s, _ := a.f.View().Shard(200); s.State != ShardFree {
		t.Fatalf("shard of an expired session: %+v", s)
	}
}

func TestShardDrain(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(4))
	a.do(createSession("a"))
	if r := a.do(Command{Op: OpSessionDrain, Session: &SessionCmd{ID: "a", Drain: true}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if s, _ := a.f.View().Session("a"); !s.Drained {
		t.Fatal("not drained")
	}
	if r := a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"})); r.Count != 0 {
		t.Fatal("a drained session was granted a shard")
	}
	a.do(Command{Op: OpSessionDrain, Session: &SessionCmd{ID: "a"}})
	if r := a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"})); r.Count != 1 {
		t.Fatal("an undrained session was refused a shard")
	}
	if r := a.do(Command{Op: OpSessionDrain, Session: &SessionCmd{ID: "zz", Drain: true}}); !errors.Is(r.Err, ErrNoSession) {
		t.Fatalf("drain of a missing session: %v", r.Err)
	}
}

func TestShardCommandsRejected(t *testing.T) {
	a := &applier{t: t, f: New()}
	if r := a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"})); !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("grant before the cluster: %v", r.Err)
	}
	a.do(initCluster(4))
	a.do(createSession("a"))
	for _, c := range []Command{
		shardCmd(OpShardGrant, false),
		shardCmd(OpShardGrant, false, ShardItem{Shard: 4, Session: "a"}),
		shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: ""}),
		{Op: OpInitCluster, Init: &InitCluster{ClusterID: "x", Shards: MaxShards + 1}},
		{Op: OpSessionCreate, Session: &SessionCmd{ID: "w", TTLNanos: 1, Weight: -1}},
	} {
		before := stateBytes(t, a.f)
		if r := a.do(c); !errors.Is(r.Err, ErrMalformed) {
			t.Errorf("%s %+v: err %v, want ErrMalformed", c.Op, c.Shard, r.Err)
		}
		if !bytes.Equal(before, stateBytes(t, a.f)) {
			t.Errorf("%s changed the state", c.Op)
		}
	}
	if r := a.do(Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: "x", Shards: MaxShards + 1}}); r.Err == nil {
		t.Fatal("huge shard count accepted")
	}
}

// stateBytes encodes f's state without its index.
func stateBytes(t *testing.T, f *FSM) []byte {
	t.Helper()
	v := f.View()
	b, err := encodeSnapshot(snapshotData{State: v.st})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randomShardCommand returns one random command of a shard history, using
// the current view so that most commands take effect.
func randomShardCommand(rng *rand.Rand, v *View, i int) Command {
	sess := fmt.Sprintf("s%d", rng.IntN(5))
	shard := uint32(rng.IntN(v.ShardCount()))
	cur, _ := v.Shard(shard)
	owner, token := cur.Owner, cur.Token
	if rng.IntN(8) == 0 {
		owner, token = sess, token+uint64(rng.IntN(2))
	}
	switch rng.IntN(10) {
	case 0:
		return createSession(sess)
	case 1:
		return Command{Op: OpSessionExpire, Session: &SessionCmd{ID: sess}}
	case 2:
		return Command{Op: OpSessionDrain, Session: &SessionCmd{ID: sess, Drain: rng.IntN(2) == 0}}
	case 3, 4:
		return shardCmd(OpShardGrant, false, ShardItem{Shard: shard, Session: sess},
			ShardItem{Shard: uint32(rng.IntN(v.ShardCount())), Session: sess})
	case 5, 6:
		return shardCmd(OpShardRevoke, false, ShardItem{Shard: shard, Session: owner, Token: token, To: sess})
	case 7, 8:
		return shardCmd(OpShardRelease, rng.IntN(2) == 0, ShardItem{Shard: shard, Session: owner, Token: token})
	default:
		return acquire(sess, "l", uint64(i), true)
	}
}

// TestRandomShardHistories applies seeded random shard histories and
// checks that per-shard tokens strictly increase across grants, owners are
// live sessions, drained sessions receive no grant, replicas agree and a
// restored snapshot continues identically.
func TestRandomShardHistories(t *testing.T) {
	for seed := uint64(1); seed <= randomSeeds(200); seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		a, b := &applier{t: t, f: New()}, &applier{t: t, f: New()}
		a.do(initCluster(uint32(1 + rng.IntN(300))))
		b.do(initCluster(a.f.View().Cluster().Shards))
		var restored *applier
		lastGrant := map[uint32]uint64{}
		for i := 0; i < 400; i++ {
			before := a.f.View()
			c := randomShardCommand(rng, before, i)
			a.do(c)
			b.do(c)
			if restored != nil {
				restored.do(c)
			}
			v := a.f.View()
			v.EachShard(func(s Shard) bool {
				if s.State == ShardFree {
					return true
				}
				sess, ok := v.Session(s.Owner)
				if !ok {
					t.Fatalf("seed %d: shard %d owned by dead session %s", seed, s.ID, s.Owner)
				}
				if s.Granted == v.Index() {
					if sess.Drained || s.Token <= lastGrant[s.ID] {
						t.Fatalf("seed %d: bad grant of shard %d: %+v (last token %d)", seed, s.ID, s, lastGrant[s.ID])
					}
					lastGrant[s.ID] = s.Token
				}
				return true
			})
			if i == 200 {
				restored = a.restoredCopy()
			}
		}
		sa, _ := a.f.EncodeSnapshot()
		sb, _ := b.f.EncodeSnapshot()
		sr, _ := restored.f.EncodeSnapshot()
		if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sr) {
			t.Fatalf("seed %d: replicas diverge", seed)
		}
	}
}

// TestShardSnapshotRejectsInconsistent checks that Restore refuses tables
// that Snapshot could not have written.
func TestShardSnapshotRejectsInconsistent(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(3))
	a.do(createSession("a"))
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 1, Session: "a"}))
	good, _ := a.f.EncodeSnapshot()
	d, err := decodeSnapshot(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(w *wireSnapshot){
		"dead owner":   func(w *wireSnapshot) { w.Shards[1].Owner = "zz" },
		"future token": func(w *wireSnapshot) { w.Shards[1].Token = w.LastToken + 1 },
		"wrong id":     func(w *wireSnapshot) { w.Shards[0].ID = 2 },
		"short table":  func(w *wireSnapshot) { w.Shards = w.Shards[:2] },
		"bad state":    func(w *wireSnapshot) { w.Shards[1].State = 7 },
		"free owner":   func(w *wireSnapshot) { w.Shards[0].Owner = "a" },
		"free node":    func(w *wireSnapshot) { w.Shards[0].OwnerNode = "n-a" },
		"free revoke":  func(w *wireSnapshot) { w.Shards[0].Revoked = 2 },
		"owned target": func(w *wireSnapshot) { w.Shards[1].To = "a" },
	} {
		w := toWire(d)
		mutate(&w)
		b, err := encodeWire(w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeSnapshot(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

// TestShardTableSizes checks tables whose size is not a whole number of
// pages or directories: every shard is reachable, in order, and the table
// ends exactly at the shard count.
func TestShardTableSizes(t *testing.T) {
	for _, n := range []uint32{1, shardPageSize - 1, shardPageSize + 1, shardPageSize * shardDirSize,
		shardPageSize*shardDirSize + 1, 3*shardPageSize*shardDirSize - 5} {
		a := &applier{t: t, f: New()}
		a.do(initCluster(n))
		a.do(createSession("s"))
		var items []ShardItem
		for s := uint32(0); s < n; s += 3 {
			items = append(items, ShardItem{Shard: s, Session: "s"})
		}
		a.doShards(OpShardGrant, ShardCmd{Items: items})
		v := a.f.View()
		next := uint32(0)
		v.EachShard(func(s Shard) bool {
			if s.ID != next || (s.State == ShardOwned) != (s.ID%3 == 0) {
				t.Fatalf("n=%d: shard %+v at position %d", n, s, next)
			}
			next++
			return true
		})
		if next != n || v.ShardCount() != int(n) {
			t.Fatalf("n=%d: %d shards scanned, count %d", n, next, v.ShardCount())
		}
		if s, ok := v.Shard(n - 1); !ok || s.ID != n-1 {
			t.Fatalf("n=%d: last shard %+v %v", n, s, ok)
		}
		if _, ok := v.Shard(n); ok {
			t.Fatalf("n=%d: shard %d exists", n, n)
		}
		if o, _, _ := v.ShardOwner(n); o != nil {
			t.Fatalf("n=%d: shard %d has an owner", n, n)
		}
		stop := 0
		v.EachShard(func(Shard) bool { stop++; return stop < 2 })
		if stop != min(2, int(n)) {
			t.Fatalf("n=%d: EachShard went on after false (%d calls)", n, stop)
		}
	}
}
