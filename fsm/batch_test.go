package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestEncodeShardCmds checks that batches split into commands that Apply
// accepts, in order, as few as the limits allow, and that a thousand-item
// grant or release with coordinator-sized session IDs is one command.
func TestEncodeShardCmds(t *testing.T) {
	long := strings.Repeat("x", MaxNameLength)
	for _, tc := range []struct {
		name     string
		op       Op
		n        int
		sess, to string
		force    bool
		want     int // commands expected (0: as few as the limits allow)
	}{
		{"grant 1000", OpShardGrant, 1000, sessionIDOf(1), "", false, 1},
		{"release 1000", OpShardRelease, 1000, sessionIDOf(1), "", false, 1},
		{"revoke 1000 with targets", OpShardRevoke, 1000, sessionIDOf(1), sessionIDOf(2), false, 1},
		{"forced release 5000", OpShardRelease, 5000, sessionIDOf(1), "", true, 0},
		{"grant 9000 short IDs", OpShardGrant, 9000, "s", "", false, 0},
		{"revoke 600 longest IDs", OpShardRevoke, 600, long, long, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ShardCmd{Force: tc.force}
			for i := range tc.n {
				c.Items = append(c.Items, ShardItem{Shard: uint32(i * 7), Session: tc.sess, Token: uint64(1<<40 + i), To: tc.to})
			}
			cmds, err := EncodeShardCmds(tc.op, c)
			if err != nil {
				t.Fatal(err)
			}
			var got []ShardItem
			for i, b := range cmds {
				d, err := Decode(b)
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				if i < len(cmds)-1 { // full: one more item would break a limit
					next, _ := Decode(cmds[i+1])
					more := append(slices.Clone(d.Shard.Items), next.Shard.Items[0])
					if _, err := Encode(Command{Op: tc.op, Shard: &ShardCmd{Force: tc.force, Items: more}}); err == nil && len(more) <= MaxShardItems {
						t.Fatalf("command %d of %d has room for another item (%d items, %d bytes)", i, len(cmds), len(d.Shard.Items), len(b))
					}
				}
				if d.Op != tc.op || d.Shard.Force != tc.force || len(d.Shard.Items) > MaxShardItems || len(b) > MaxCommandSize {
					t.Fatalf("command %d: %s force %v, %d items, %d bytes", i, d.Op, d.Shard.Force, len(d.Shard.Items), len(b))
				}
				got = append(got, d.Shard.Items...)
			}
			if !slices.Equal(got, c.Items) {
				t.Fatal("the commands do not carry the batch in order")
			}
			if tc.want != 0 && len(cmds) != tc.want {
				t.Fatalf("%d commands, want %d (sizes %v)", len(cmds), tc.want, sizes(cmds))
			}
		})
	}
	if _, err := EncodeShardCmds(OpShardGrant, ShardCmd{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := EncodeShardCmds(OpAcquire, ShardCmd{Items: []ShardItem{{Session: "s"}}}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("acquire: %v", err)
	}
	huge := strings.Repeat("y", MaxCommandSize)
	if _, err := EncodeShardCmds(OpShardGrant, ShardCmd{Items: []ShardItem{{Session: huge}}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge item: %v", err)
	}
}

func sizes(cmds [][]byte) string {
	var s []string
	for _, b := range cmds {
		s = append(s, fmt.Sprint(len(b)))
	}
	return strings.Join(s, ",")
}

// TestShardBatchApplies grants a 100,000-shard table in batches split by
// EncodeShardCmds and releases it again, checking every item took effect.
func TestShardBatchApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-shard table")
	}
	a := &applier{t: t, f: New()}
	a.do(initCluster(largeShards))
	for i := range largeSessions {
		a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: sessionIDOf(i), Node: "n", TTLNanos: 1e9}})
	}
	var grant ShardCmd
	for s := range uint32(largeShards) {
		grant.Items = append(grant.Items, ShardItem{Shard: s, Session: sessionIDOf(int(s) % largeSessions)})
	}
	total := 0
	rs := a.doShards(OpShardGrant, grant)
	for _, r := range rs {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		total += r.Count
	}
	if total != largeShards {
		t.Fatalf("%d shards granted in %d commands, want %d", total, len(rs), largeShards)
	}
	t.Logf("%d grants in %d commands", largeShards, len(rs))
	var rel ShardCmd
	a.f.View().EachShard(func(s Shard) bool {
		rel.Items = append(rel.Items, ShardItem{Shard: s.ID, Session: s.Owner, Token: s.Token})
		return true
	})
	total = 0
	rs = a.doShards(OpShardRelease, rel)
	for _, r := range rs {
		total += r.Count
	}
	if total != largeShards {
		t.Fatalf("%d shards released in %d commands, want %d", total, len(rs), largeShards)
	}
	t.Logf("%d releases in %d commands", largeShards, len(rs))
}
