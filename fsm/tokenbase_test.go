package fsm

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// initWithBase is an InitCluster of a new incarnation created at clock
// reading created (µs) with the operator's floor.
func initWithBase(id string, shards uint32, created int64, floor uint64) Command {
	return Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: id, Shards: shards, Voters: 3,
		Created: created, TokenFloor: floor}}
}

// grantAll grants every kind of token once on a: a lease, a semaphore
// permit and every shard, and returns the tokens in grant order.
func grantAll(t *testing.T, a *applier, shards uint32) []uint64 {
	t.Helper()
	a.do(createSession("s"))
	var out []uint64
	if r := a.do(acquire("s", "l", 1, false)); r.Err != nil {
		t.Fatal(r.Err)
	} else {
		out = append(out, r.Token)
	}
	if r := a.do(semAcquire("s", "sem", 2, 2, true)); r.Err != nil {
		t.Fatal(r.Err)
	} else {
		out = append(out, r.Token)
	}
	var items []ShardItem
	for s := range shards {
		items = append(items, ShardItem{Shard: s, Session: "s"})
	}
	a.do(shardCmd(OpShardGrant, false, items...))
	for s := range shards {
		sh, _ := a.f.View().Shard(s)
		out = append(out, sh.Token)
	}
	return out
}

// TestTokenBaseFirstGrants checks that a cluster created with a clock
// reading and an operator floor issues its first lease, semaphore and shard
// tokens just above the larger of the two, in order, and that they fit a
// signed 64-bit column even from the highest base.
func TestTokenBaseFirstGrants(t *testing.T) {
	const clock = 1_771_000_000_000_000 // 2026-02, in µs
	for _, tc := range []struct {
		name           string
		created        int64
		floor, base    uint64
		wantV3Encoding bool
	}{
		{"earlier release: no base", 0, 0, 0, false},
		{"clock only", clock, 0, clock, true},
		{"floor above the clock", clock, clock + 5_000_000, clock + 5_000_000, true},
		{"floor below the clock", clock, 12345, clock, true},
		{"floor only", 0, 77, 77, true},
		{"highest base", MaxTokenBase, MaxTokenBase, MaxTokenBase, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := initWithBase("c", 4, tc.created, tc.floor)
			b := mustEncode(t, c)
			if v3 := b[0] == InitCommandVersion; v3 != tc.wantV3Encoding {
				t.Fatalf("encoded under version %d", b[0])
			}
			a := &applier{t: t, f: New()}
			if r := a.do(c); r.Err != nil {
				t.Fatal(r.Err)
			}
			v := a.f.View()
			if v.LastToken() != tc.base || v.Cluster().TokenBase() != tc.base || v.Cluster().Created != tc.created || v.Cluster().TokenFloor != tc.floor {
				t.Fatalf("last token %d, cluster %+v; want base %d", v.LastToken(), v.Cluster(), tc.base)
			}
			toks := grantAll(t, a, 4)
			for i, tok := range toks {
				if tok != tc.base+1+uint64(i) {
					t.Fatalf("grant %d got token %d, want %d (base %d)", i, tok, tc.base+1+uint64(i), tc.base)
				}
				if tok > math.MaxInt64 {
					t.Fatalf("token %d does not fit a BIGINT", tok)
				}
			}
			r := a.restoredCopy()
			if r.f.View().LastToken() != a.f.View().LastToken() || r.f.View().Cluster() != a.f.View().Cluster() {
				t.Fatalf("restored %d %+v, live %d %+v", r.f.View().LastToken(), r.f.View().Cluster(),
					a.f.View().LastToken(), a.f.View().Cluster())
			}
			if tok := r.do(acquire("s", "l2", 3, false)).Token; tok != tc.base+uint64(len(toks))+1 {
				t.Fatalf("after restore the next token is %d", tok)
			}
		})
	}
}

// TestTokenBaseAssumptionEdge runs the documented assumption at its edge.
// An earlier incarnation created at clock reading c0 issues n tokens; a new
// one is created at c1. Its tokens are above every earlier one exactly when
// c1 >= c0 + n, that is n <= c1 - c0: at most one grant per microsecond
// between the creations. One microsecond less (n grants a microsecond too
// many, or the new creator's clock a microsecond behind) and the new
// cluster's first token equals the old cluster's last, which a fence
// accepts: two holders with one token.
func TestTokenBaseAssumptionEdge(t *testing.T) {
	const c0 = 1_771_000_000_000_000
	old := &applier{t: t, f: New()}
	old.do(initWithBase("old", 8, c0, 0))
	old.do(createSession("s"))
	const n = 1000 // grants of the old cluster
	for i := range uint64(n) {
		r := old.do(acquire("s", "l", i+1, false))
		if r.Err != nil || r.Token != c0+i+1 {
			t.Fatalf("old grant %d: %+v", i, r)
		}
		old.do(release("s", "l", r.Token))
	}
	oldLast := old.f.View().LastToken()
	if oldLast != c0+n {
		t.Fatalf("old cluster's last token %d, want %d", oldLast, c0+n)
	}
	for _, tc := range []struct {
		name  string
		c1    int64
		above bool
	}{
		{"a millisecond later than n µs", c0 + n + 1000, true},
		{"exactly n µs later: holds", c0 + n, true},
		{"n-1 µs later: fails", c0 + n - 1, false},
		{"clock set back before c0: fails", c0 - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &applier{t: t, f: New()}
			a.do(initWithBase("new", 8, tc.c1, 0))
			first := grantAll(t, a, 8)[0]
			if got := first > oldLast; got != tc.above {
				t.Fatalf("new cluster's first token %d, old last %d: above %v, want %v", first, oldLast, got, tc.above)
			}
			// The operator's floor, read from the resource, repairs it.
			b := &applier{t: t, f: New()}
			b.do(initWithBase("new", 8, tc.c1, oldLast))
			if first := grantAll(t, b, 8)[0]; first <= oldLast {
				t.Fatalf("with the floor %d the first token is %d", oldLast, first)
			}
		})
	}
}

// TestTokenBaseRejected checks that Apply refuses a base beyond
// MaxTokenBase or a negative clock, changing nothing, and that Decode
// refuses a base under version 1 and other operations under
// InitCommandVersion.
func TestTokenBaseRejected(t *testing.T) {
	for _, c := range []Command{
		initWithBase("c", 4, MaxTokenBase+1, 0),
		initWithBase("c", 4, 0, MaxTokenBase+1),
		initWithBase("c", 4, -1, 0),
		initWithBase("c", 4, 5, math.MaxUint64),
	} {
		a := &applier{t: t, f: New()}
		before := stateBytes(t, a.f)
		if r := a.do(c); !errors.Is(r.Err, ErrMalformed) || !bytes.Equal(before, stateBytes(t, a.f)) {
			t.Errorf("init %+v: %v", c.Init, r.Err)
		}
	}
	v3 := mustEncode(t, initWithBase("c", 4, 10, 0))
	v1 := append([]byte{CommandVersion}, v3[1:]...)
	if _, err := Decode(v1); !errors.Is(err, ErrMalformed) {
		t.Errorf("a base under version 1: %v", err)
	}
	noop := []byte{InitCommandVersion, byte(OpNoop)}
	if _, err := Decode(noop); !errors.Is(err, ErrMalformed) {
		t.Errorf("noop under version %d: %v", InitCommandVersion, err)
	}
	plain := mustEncode(t, initCluster(4))
	three := append([]byte{InitCommandVersion}, plain[1:]...)
	if _, err := Decode(three); !errors.Is(err, ErrMalformed) {
		t.Errorf("no base under version %d: %v", InitCommandVersion, err)
	}
	// A second init of the same cluster changes nothing, base or not.
	a := &applier{t: t, f: New()}
	a.do(initWithBase("c", 4, 100, 0))
	before := stateBytes(t, a.f)
	if r := a.do(initWithBase("c", 4, 500, 900)); r.Err != nil || !bytes.Equal(before, stateBytes(t, a.f)) {
		t.Errorf("second init: %v", r.Err)
	}
}

// TestGoldenInitCommands pins the encoding of OpInitCluster: without a
// base as every release wrote it (version 1), with one under
// InitCommandVersion, in testdata/init-commands.golden; both decode and
// apply as before.
func TestGoldenInitCommands(t *testing.T) {
	cmds := []Command{initCluster(40), initWithBase("c", 40, 1_771_000_000_000_000, 9_000_000_000_000_000)}
	lines := checkGoldenCommands(t, filepath.Join("testdata", "init-commands.golden"), cmds,
		func(got, want Command) bool { return got.Init != nil && *got.Init == *want.Init })
	if v := lines[0][:2]; v != "01" {
		t.Errorf("an init without a base is written under version %s, not 1 as earlier releases wrote it", v)
	}
}

// TestGoldenSnapshotWithBase checks that a snapshot of a cluster created
// with a token base restores to the same bytes and keeps the base, that a
// snapshot whose last token is below its base is refused, and that the
// golden snapshots of earlier releases (no base) restore with base 0.
func TestGoldenSnapshotWithBase(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initWithBase("c", 8, 1_771_000_000_000_000, 0))
	grantAll(t, a, 8)
	snap, err := a.f.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.EncodeSnapshot(); !bytes.Equal(again, snap) {
		t.Fatal("a snapshot with a token base restores to other bytes")
	}
	if r.View().Cluster().TokenBase() != 1_771_000_000_000_000 {
		t.Fatalf("restored cluster %+v", r.View().Cluster())
	}
	d, err := decodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	d.State.LastToken = d.State.Cluster.TokenBase() - 1
	d.State.Leases, d.State.Semaphores = nil, nil
	d.State.Shards = newShardTable(8)
	bad, err := encodeSnapshot(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := New().Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a last token below the base restored: %v", err)
	}
	for _, name := range []string{"snapshot-v1.golden", "snapshot-v2.golden", "snapshot-sem.golden"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		f := New()
		if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := f.View().Cluster(); c.TokenBase() != 0 || c.Created != 0 {
			t.Fatalf("%s restored with cluster %+v", name, c)
		}
	}
}
