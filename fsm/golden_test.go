package fsm

import (
	"bytes"
	"encoding/hex"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/snapshot-v2.golden from the current code")

// goldenHistory applies a fixed history that leaves every kind of state a
// snapshot holds: sessions (drained, weighted, with addresses), leases with
// waiters, and shards free (with the token of their last grant), owned and
// revoking (with a target).
func goldenHistory(t *testing.T) *applier {
	a := &applier{t: t, f: New()}
	a.do(initCluster(40))
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sa", Node: "na", NodeID: "ia", Addr: "a:1", TTLNanos: 1e9}})
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sb", Node: "nb", NodeID: "ib", Addr: "b:1", TTLNanos: 2e9, Weight: 2}})
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sc", Node: "nc", NodeID: "ic", TTLNanos: 3e9}})
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sd", Node: "nd", NodeID: "id", TTLNanos: 1e9, Drain: true}})
	a.do(acquire("sa", "l1", 1, false))
	a.do(acquire("sb", "l1", 1, true))
	a.do(acquire("sc", "l1", 2, true))
	a.do(acquire("sb", "l2", 3, false))
	var grant []ShardItem
	for s := range uint32(36) {
		grant = append(grant, ShardItem{Shard: s, Session: []string{"sa", "sb", "sc"}[s%3]})
	}
	a.do(shardCmd(OpShardGrant, false, grant...))
	v := a.f.View()
	item := func(s uint32, to string) ShardItem {
		sh, _ := v.Shard(s)
		return ShardItem{Shard: s, Session: sh.Owner, Token: sh.Token, To: to}
	}
	a.do(shardCmd(OpShardRevoke, false, item(3, "sb"), item(4, ""), item(5, "gone")))
	a.do(shardCmd(OpShardRelease, false, item(6, ""), item(7, "")))
	a.do(Command{Op: OpSessionDrain, Session: &SessionCmd{ID: "sc", Drain: true}})
	return a
}

// TestGoldenSnapshot restores a snapshot written by an earlier release (v1:
// one full entry per shard, sessions without request marks) and checks
// that the state reads back the same and encodes to the very same bytes;
// and it pins today's encoding of the same history (v2: sessions carry
// their lease request marks) to testdata/snapshot-v2.golden.
func TestGoldenSnapshot(t *testing.T) {
	path := filepath.Join("testdata", "snapshot-v1.golden")
	current := filepath.Join("testdata", "snapshot-v2.golden")
	if *updateGolden {
		b, err := goldenHistory(t).f.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(current, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pinned, err := os.ReadFile(current)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(golden))); err != nil {
		t.Fatal(err)
	}
	again, err := f.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, golden) {
		t.Fatal("the restored golden snapshot encodes differently")
	}
	live := goldenHistory(t).f
	if b, _ := live.EncodeSnapshot(); !bytes.Equal(b, pinned) {
		t.Fatal("the golden history now encodes differently from testdata/snapshot-v2.golden")
	}
	v, lv := f.View(), live.View()
	if v.Index() != lv.Index() || v.ShardsIndex() != lv.ShardsIndex() || v.LastToken() != lv.LastToken() {
		t.Fatalf("restored index %d/%d/%d, live %d/%d/%d", v.Index(), v.ShardsIndex(), v.LastToken(),
			lv.Index(), lv.ShardsIndex(), lv.LastToken())
	}
	for id := range uint32(40) {
		got, _ := v.Shard(id)
		want, _ := lv.Shard(id)
		if got != want {
			t.Fatalf("shard %d: restored %+v, live %+v", id, got, want)
		}
	}
	checks := map[uint32]func(Shard) bool{
		0: func(s Shard) bool {
			return s.State == ShardOwned && s.Owner == "sa" && s.OwnerAddr == "a:1" && s.OwnerNodeID == "ia"
		},
		3:  func(s Shard) bool { return s.State == ShardRevoking && s.To == "sb" && s.Revoked != 0 },
		5:  func(s Shard) bool { return s.State == ShardRevoking && s.To == "gone" },
		6:  func(s Shard) bool { return s.State == ShardFree && s.Owner == "" && s.Token != 0 && s.Granted == 0 },
		38: func(s Shard) bool { return s.State == ShardFree && s.Token == 0 },
	}
	for id, ok := range checks {
		if s, _ := v.Shard(id); !ok(s) {
			t.Errorf("shard %d restored as %+v", id, s)
		}
	}
	if s, ok := v.Session("sc"); !ok || !s.Drained {
		t.Errorf("session sc restored as %+v", s)
	}
	if l, ok := v.Lease("l1"); !ok || l.Holder != "sa" || len(l.Waiters) != 2 {
		t.Errorf("lease l1 restored as %+v", l)
	}
}

// TestShardOwnerShared checks the lookup behind Coordinator.Owner against
// Shard, and that every shard a session owns shares the session's identity
// rather than a copy of it, also after a restore.
func TestShardOwnerShared(t *testing.T) {
	a := goldenHistory(t)
	for _, f := range []*FSM{a.f, a.restoredCopy().f} {
		v := f.View()
		var first *Session
		for id := range uint32(41) {
			o, tok, revoking := v.ShardOwner(id)
			s, ok := v.Shard(id)
			if !ok {
				if id != 40 || o != nil {
					t.Fatalf("shard %d: ok %v, owner %v", id, ok, o)
				}
				continue
			}
			if (o == nil) != (s.State == ShardFree) || revoking != (s.State == ShardRevoking) {
				t.Fatalf("shard %d: owner %v revoking %v, shard %+v", id, o, revoking, s)
			}
			if o == nil {
				continue
			}
			if o.ID != s.Owner || o.Node != s.OwnerNode || o.NodeID != s.OwnerNodeID || o.Addr != s.OwnerAddr || tok != s.Token {
				t.Fatalf("shard %d: owner %+v token %d, shard %+v", id, o, tok, s)
			}
			if o.ID == "sa" {
				if first != nil && first != o {
					t.Fatalf("shard %d: session sa's identity is copied, not shared", id)
				}
				first = o
			}
		}
		if first == nil {
			t.Fatal("no shard of sa seen")
		}
	}
}

// checkGoldenCommands checks that cmds encode to the hex lines of the
// golden file at path (rewritten first with -update-golden) and that each
// line decodes to a command same accepts; it returns the lines.
func checkGoldenCommands(t *testing.T, path string, cmds []Command, same func(got, want Command) bool) []string {
	t.Helper()
	if *updateGolden {
		var lines []string
		for _, c := range cmds {
			lines = append(lines, hex.EncodeToString(mustEncode(t, c)))
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(raw))
	if len(lines) != len(cmds) {
		t.Fatalf("%d golden commands in %s, want %d", len(lines), path, len(cmds))
	}
	for i, line := range lines {
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, mustEncode(t, cmds[i])) {
			t.Errorf("command %d now encodes differently from %s", i, path)
		}
		if c, err := Decode(b); err != nil || !same(c, cmds[i]) {
			t.Errorf("command %d of %s decodes to %+v, %v", i, path, c, err)
		}
	}
	return lines
}
