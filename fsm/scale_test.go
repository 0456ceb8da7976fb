package fsm

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/hashicorp/raft"
)

// Sizes of the large-table scenario: a replica of a 64-node cluster with
// 100,000 shards, every shard owned.
const (
	largeShards   = 100_000
	largeSessions = 64
)

// sessionIDOf returns a session ID shaped like the coordinator's (128
// random bits in hex): 32 characters.
func sessionIDOf(i int) string { return fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15) }

// largeTable builds a replica of shards shards spread round robin over
// sessions sessions with node names, IDs and addresses of realistic
// lengths, granted in commands of batch items.
func largeTable(tb testing.TB, shards, sessions, batch int) *applier {
	tb.Helper()
	a := &applier{t: tb, f: New()}
	a.do(initCluster(uint32(shards)))
	for i := range sessions {
		a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: sessionIDOf(i), Node: fmt.Sprintf("node-%02d", i),
			NodeID: fmt.Sprintf("%032x", uint64(i)+1), Addr: fmt.Sprintf("10.0.%d.%d:7946", i/250, i%250+1), TTLNanos: 1e10}})
	}
	items := make([]ShardItem, 0, batch)
	for s := range shards {
		items = append(items, ShardItem{Shard: uint32(s), Session: sessionIDOf(s % sessions)})
		if len(items) == batch || s == shards-1 {
			if r := a.do(shardCmd(OpShardGrant, false, items...)); r.Err != nil || r.Count != len(items) {
				tb.Fatalf("grant: %+v", r)
			}
			items = items[:0]
		}
	}
	return a
}

// liveHeap returns the live heap after two forced collections.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestShardTableMemory measures the live heap one replica spends on a
// 100,000-shard table owned by 64 sessions, per shard.
func TestShardTableMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-shard table")
	}
	before := liveHeap()
	a := largeTable(t, largeShards, largeSessions, 1000)
	after := liveHeap()
	perShard := float64(after-before) / largeShards
	t.Logf("live heap of a replica with %d shards over %d sessions: %.2f MiB, %.1f bytes/shard",
		largeShards, largeSessions, float64(after-before)/(1<<20), perShard)
	runtime.KeepAlive(a.f.View())
}

// BenchmarkViewShard measures a shard lookup on the current view, the read
// behind Coordinator.Owner.
func BenchmarkViewShard(b *testing.B) {
	a := largeTable(b, largeShards, largeSessions, 1000)
	f := a.f
	b.ReportAllocs()
	var id uint32
	n := 0
	for b.Loop() {
		if s, ok := f.View().Shard(id); ok && s.State == ShardOwned && s.OwnerNode != "" {
			n++
		}
		id = (id + 7919) % largeShards
	}
	if n == 0 {
		b.Fatal("no owned shard seen")
	}
}

// BenchmarkApplyGrant measures applying one grant command to a
// 100,000-shard table, per command: 1,000 shards spread over the table
// (every 100th, one per page), 1,000 neighbouring shards, and one shard.
// Between commands (untimed) one release frees the same shards again.
func BenchmarkApplyGrant(b *testing.B) {
	a := largeTable(b, largeShards, largeSessions, 1000)
	for _, bc := range []struct {
		name      string
		n, stride int
	}{{"1000-spread", 1000, 100}, {"1000-contiguous", 1000, 1}, {"1", 1, 1}} {
		b.Run(bc.name, func(b *testing.B) {
			benchGrant(b, a, bc.n, bc.stride)
		})
	}
}

func benchGrant(b *testing.B, a *applier, n, stride int) {
	a.t = b
	release := func(ids []uint32) {
		v := a.f.View()
		rel := make([]ShardItem, len(ids))
		for i, id := range ids {
			sh, _ := v.Shard(id)
			rel[i] = ShardItem{Shard: id, Session: sh.Owner, Token: sh.Token}
		}
		if r := a.do(shardCmd(OpShardRelease, false, rel...)); r.Count != len(rel) {
			b.Fatalf("release: %+v", r)
		}
	}
	ids := make([]uint32, n)
	grant := make([]ShardItem, n)
	for i := range ids {
		ids[i] = uint32((i*stride + 50) % largeShards)
		grant[i] = ShardItem{Shard: ids[i], Session: sessionIDOf(i % largeSessions)}
	}
	release(ids)
	gb := mustEncode(b, shardCmd(OpShardGrant, false, grant...))
	b.ReportAllocs()
	for b.Loop() {
		a.index++
		if r := a.f.Apply(rawLog(a.index, gb)).(Result); r.Count != n {
			b.Fatalf("grant: %+v", r)
		}
		b.StopTimer()
		release(ids)
		b.StartTimer()
	}
	b.ReportMetric(float64(len(gb)), "cmd-bytes")
	// Leave the table as it was.
	a.index++
	a.f.Apply(rawLog(a.index, gb))
}

// BenchmarkApplySessionExpire measures the expiry of one of 64 sessions
// owning a 100,000-shard table (freeing its 1,563 shards).
func BenchmarkApplySessionExpire(b *testing.B) {
	a := largeTable(b, largeShards, largeSessions, 1000)
	base := a.f.View()
	c, err := Decode(mustEncode(b, Command{Op: OpSessionExpire, Session: &SessionCmd{ID: sessionIDOf(5)}}))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, r, err := apply(base.st, base.Index()+1, c, nil); err != nil || r.Noop {
			b.Fatalf("expire: %+v %v", r, err)
		}
	}
}

// BenchmarkSnapshot measures encoding and restoring a 100,000-shard
// snapshot.
func BenchmarkSnapshot(b *testing.B) {
	a := largeTable(b, largeShards, largeSessions, 1000)
	snap, err := a.f.EncodeSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.f.EncodeSnapshot(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(snap)), "snapshot-bytes")
	})
	b.Run("persist", func(b *testing.B) {
		snap, _ := a.f.Snapshot()
		b.ReportAllocs()
		for b.Loop() {
			if err := snap.Persist(discardSink{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeSnapshot(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func rawLog(index uint64, data []byte) *raft.Log {
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
}

// BenchmarkShardOwner measures the ownership lookup on the current view
// (what Coordinator.Owner does), cycling over 256 owned shards as the
// coordinator's BenchmarkOwner does, and over a 100,000-shard table.
func BenchmarkShardOwner(b *testing.B) {
	for _, size := range []int{256, largeShards} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			f := largeTable(b, size, largeSessions, 1000).f
			b.ReportAllocs()
			var id uint32
			n := 0
			for b.Loop() {
				if o, tok, _ := f.View().ShardOwner(id); o != nil && tok != 0 && o.Node != "" {
					n++
				}
				id = (id + 1) % uint32(size)
			}
			if n == 0 {
				b.Fatal("no owned shard seen")
			}
		})
	}
}

// BenchmarkEachShard measures a full scan of a 100,000-shard table, what a
// consumer without ShardChanges does on every change.
func BenchmarkEachShard(b *testing.B) {
	v := largeTable(b, largeShards, largeSessions, 1000).f.View()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		v.EachShard(func(s Shard) bool {
			if s.State == ShardOwned && s.Owner != "" {
				n++
			}
			return true
		})
		if n != largeShards {
			b.Fatalf("%d owned", n)
		}
	}
}

// BenchmarkShardChanges measures listing the shards changed by the last
// 10 commands (100 releases each, spread over the table) of a
// 100,000-shard table: what a consumer pays per batch of changes instead
// of a full scan (BenchmarkEachShard).
func BenchmarkShardChanges(b *testing.B) {
	a := largeTable(b, largeShards, largeSessions, 1000)
	cursor := a.f.View().ShardCursor()
	for c := range 10 {
		v := a.f.View()
		var rel []ShardItem
		for s := c; s < largeShards; s += largeShards / 100 {
			sh, _ := v.Shard(uint32(s))
			rel = append(rel, ShardItem{Shard: sh.ID, Session: sh.Owner, Token: sh.Token})
		}
		a.do(shardCmd(OpShardRelease, false, rel...))
	}
	v := a.f.View()
	buf := make([]uint32, 0, 1000)
	b.ReportAllocs()
	for b.Loop() {
		ids, ok := v.ShardChanges(cursor, buf[:0])
		if !ok || len(ids) != 1000 {
			b.Fatalf("%d changes, ok %v", len(ids), ok)
		}
	}
}

// discardSink is a raft.SnapshotSink that drops what it is given.
type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) ID() string                  { return "discard" }
func (discardSink) Cancel() error               { return nil }
func (discardSink) Close() error                { return nil }
