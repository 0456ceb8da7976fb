package fsm

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// createGen is a create of session id for node nid at generation gen.
func createGen(id, nid string, gen uint64) Command {
	return Command{Op: OpSessionCreate, Session: &SessionCmd{ID: id, Node: "n-" + nid, NodeID: nid, TTLNanos: 1e9, Gen: gen}}
}

// TestLateCreateOfAnOlderGenerationIsStale: a create that commits after a
// newer session of its node changes nothing (no session, no shard can go
// to it), while a retry of a committed create is answered as before.
func TestLateCreateOfAnOlderGenerationIsStale(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(createGen("s2", "node", 2))
	before := a.f.View()
	for _, late := range []Command{createGen("s1", "node", 1), createGen("s1b", "node", 2)} {
		if r := a.do(late); r.Err != nil || !r.Stale {
			t.Fatalf("late create %s: %+v, want stale", late.Session.ID, r)
		}
		if _, ok := a.f.View().Session(late.Session.ID); ok {
			t.Fatalf("late create %s made a session", late.Session.ID)
		}
	}
	if r := a.do(createGen("s2", "node", 2)); r.Err != nil || !r.Noop || r.Stale {
		t.Fatalf("retry of the committed create: %+v, want a no-op", r)
	}
	if got, want := len(a.f.View().Sessions()), len(before.Sessions()); got != want {
		t.Fatalf("%d sessions after the late creates, want %d", got, want)
	}
	if r := a.do(createGen("t1", "other", 1)); r.Err != nil || r.Stale {
		t.Fatalf("another node's first create: %+v", r)
	}
}

// TestNewerCreateEndsTheNodesOlderSessions: a create of a later generation
// ends its node's older sessions as their close would: their lease goes to
// the next waiter, their shards are freed (and listed as changed), and
// other nodes' sessions stay.
func TestNewerCreateEndsTheNodesOlderSessions(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(8))
	a.do(createGen("old", "node", 1))
	a.do(createGen("peer", "peer", 1))
	a.do(acquire("old", "l", 1, false))
	a.do(acquire("peer", "l", 1, true))
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "old"}, ShardItem{Shard: 1, Session: "peer"}))
	cursor := a.f.View().ShardCursor()
	if r := a.do(createGen("new", "node", 2)); r.Err != nil || r.Stale || r.Noop {
		t.Fatalf("newer create: %+v", r)
	}
	v := a.f.View()
	if _, ok := v.Session("old"); ok {
		t.Fatal("the older session of the node is still there")
	}
	if _, ok := v.Session("peer"); !ok {
		t.Fatal("another node's session was ended")
	}
	if h, _, ok := v.Holder("l"); !ok || h != "peer" {
		t.Fatalf("lease l held by %q (%v), want the waiter peer", h, ok)
	}
	if s, _ := v.Shard(0); s.State != ShardFree {
		t.Fatalf("shard 0 of the ended session: %+v", s)
	}
	if s, _ := v.Shard(1); s.Owner != "peer" {
		t.Fatalf("shard 1: %+v", s)
	}
	if ids, ok := v.ShardChanges(cursor, nil); !ok || len(ids) != 1 || ids[0] != 0 {
		t.Fatalf("changes since the grant: %v %v, want shard 0", ids, ok)
	}
	// Replicas agree, and a restored copy carries the generations.
	r := a.restoredCopy()
	if s, _ := r.f.View().Session("new"); s.Gen != 2 {
		t.Fatalf("restored session %+v, want generation 2", s)
	}
	if r.do(createGen("late", "node", 2)); len(r.f.View().Sessions()) != 2 {
		t.Fatal("a stale create changed a restored replica")
	}
}

// TestCreatesWithoutGenerationKeepTheirMeaning: creates as an older
// release wrote them (no generation; their bytes are pinned in
// testdata/session-commands-v1.golden) decode with no generation and
// follow no generation rule: two sessions of one node both live.
func TestCreatesWithoutGenerationKeepTheirMeaning(t *testing.T) {
	old := []Command{
		{Op: OpSessionCreate, Session: &SessionCmd{ID: "s1", Node: "n", NodeID: "nid", TTLNanos: 1e9, Addr: "a:1"}},
		{Op: OpSessionCreate, Session: &SessionCmd{ID: "s2", Node: "n", NodeID: "nid", TTLNanos: 1e9, Drain: true}},
		{Op: OpSessionClose, Session: &SessionCmd{ID: "s1"}},
	}
	path := filepath.Join("testdata", "session-commands-v1.golden")
	var enc [][]byte
	for _, c := range old {
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		enc = append(enc, b)
	}
	if *updateGolden {
		if err := os.WriteFile(path, bytes.Join(enc, []byte("\n--\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pinned, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := bytes.Split(pinned, []byte("\n--\n"))
	if len(recs) != len(old) {
		t.Fatalf("%d records in %s", len(recs), path)
	}
	f := New()
	for i, b := range recs {
		if !bytes.Equal(b, enc[i]) {
			t.Fatalf("command %d encodes differently from the pinned bytes", i)
		}
		c, err := Decode(b)
		if err != nil || c.Session.Gen != 0 {
			t.Fatalf("command %d: %+v, %v", i, c.Session, err)
		}
		if r := f.Apply(rawLog(uint64(i+1), b)).(Result); r.Err != nil {
			t.Fatalf("command %d: %v", i, r.Err)
		}
		if i == 1 && len(f.View().Sessions()) != 2 {
			t.Fatal("a create without generation ended the node's other session")
		}
	}
	snap, err := f.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if s, ok := g.View().Session("s2"); !ok || s.Gen != 0 || !s.Drained {
		t.Fatalf("restored %+v", s)
	}
}
