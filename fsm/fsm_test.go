package fsm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func mustEncode(t testing.TB, c Command) []byte {
	t.Helper()
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func applyAll(f *FSM, logs [][]byte) []Result {
	var out []Result
	for i, b := range logs {
		out = append(out, f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: b}).(Result))
	}
	return out
}

func testLog(t *testing.T) [][]byte {
	return [][]byte{
		mustEncode(t, Command{Op: OpNoop}),
		{0xff, 0x00},
		mustEncode(t, Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: "c1", Shards: 16, Voters: 3, CreatedBy: "a"}}),
		mustEncode(t, Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: "c2", Shards: 8}}),
		mustEncode(t, Command{Op: OpInitCluster, Init: &InitCluster{ClusterID: "c1", Shards: 16}}),
		{CommandVersion, byte(OpInitCluster), 0xc1},
	}
}

func TestApplyInitCluster(t *testing.T) {
	f := New()
	res := applyAll(f, testLog(t))
	wantErr := []error{nil, ErrUnknownVersion, nil, ErrConflict, nil, ErrMalformed}
	for i, r := range res {
		if !errors.Is(r.Err, wantErr[i]) || (wantErr[i] == nil) != (r.Err == nil) {
			t.Errorf("entry %d: err %v, want %v", i+1, r.Err, wantErr[i])
		}
	}
	v := f.View()
	if v.Index() != 6 {
		t.Fatalf("index %d, want 6", v.Index())
	}
	want := Cluster{ID: "c1", Shards: 16, Voters: 3, CreatedBy: "a", CreatedIndex: 3}
	if v.Cluster() != want {
		t.Fatalf("cluster %+v, want %+v", v.Cluster(), want)
	}
}

func TestDeterministicSnapshots(t *testing.T) {
	a, b := New(), New()
	applyAll(a, testLog(t))
	applyAll(b, testLog(t))
	sa, err := a.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := b.EncodeSnapshot()
	if !bytes.Equal(sa, sb) {
		t.Fatal("the same log gave different snapshots")
	}
}

type sink struct {
	bytes.Buffer
	cancelled bool
}

func (s *sink) ID() string    { return "test" }
func (s *sink) Cancel() error { s.cancelled = true; return nil }
func (s *sink) Close() error  { return nil }

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	a := New()
	applyAll(a, testLog(t))
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	b := New()
	if err := b.Restore(io.NopCloser(bytes.NewReader(s.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if b.View().Index() != a.View().Index() || b.View().Cluster() != a.View().Cluster() {
		t.Fatalf("restored %d %+v, want %d %+v", b.View().Index(), b.View().Cluster(), a.View().Index(), a.View().Cluster())
	}
	sa, _ := a.EncodeSnapshot()
	sb, _ := b.EncodeSnapshot()
	if !bytes.Equal(sa, sb) {
		t.Fatal("restored state encodes differently")
	}
	// A corrupt snapshot is refused and changes nothing.
	if err := b.Restore(io.NopCloser(bytes.NewReader(s.Bytes()[:len(s.Bytes())-2]))); err == nil {
		t.Fatal("truncated snapshot restored")
	}
	if b.View().Cluster().ID != "c1" {
		t.Fatal("failed restore changed the state")
	}
}

func TestWait(t *testing.T) {
	f := New()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.Wait(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on empty fsm: %v", err)
	}
	done := make(chan *View)
	go func() {
		v, _ := f.Wait(context.Background(), 2)
		done <- v
	}()
	applyAll(f, testLog(t)[:3])
	if v := <-done; v.Index() < 2 {
		t.Fatalf("woke at index %d", v.Index())
	}
}

func TestEncodeRejects(t *testing.T) {
	if _, err := Encode(Command{Op: OpInitCluster}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("init without body: %v", err)
	}
	if _, err := Encode(Command{Op: 99}); !errors.Is(err, ErrUnknownOp) {
		t.Fatalf("unknown op: %v", err)
	}
	if _, err := Decode(make([]byte, MaxCommandSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, b := range testLog(&testing.T{}) {
		f.Add(b)
	}
	f.Add([]byte{1, 1, 0x85})
	f.Add([]byte{1, 1, 0xdd, 0xff, 0xff, 0xff, 0xff})
	for _, c := range []Command{
		shardCmd(OpShardGrant, false, ShardItem{Shard: 1, Session: "s"}),
		shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: "s", Token: 1, To: "s"}),
		shardCmd(OpShardRelease, true, ShardItem{Shard: 0, Session: "s", Token: 1}),
		{Op: OpSessionDrain, Session: &SessionCmd{ID: "s", Drain: true}},
		semAcquire("s", "sem", 1, 2, true),
		semRelease("s", "sem", 1, 0),
		initWithBase("c2", 8, 1_771_000_000_000_000, 42),
		acquireValued("s", "x", 1, true, "10.0.0.1:8080"),
		setValue("s", "x", 1, 3, 2, "ready"),
		pin(1, "n", true), unpin(1, ""),
		handover("s", "x", 1, 0, 2),
	} {
		f.Add(mustEncode(&testing.T{}, c))
	}
	// Shard commands in both forms: the msgpack one of version 1 and the
	// compact one (with several sessions, targets and large numbers).
	for _, b := range readV1ShardCommands(f) {
		f.Add(b)
	}
	rng := rand.New(rand.NewPCG(16, 1))
	for range 4 {
		f.Add(mustEncode(f, randomShardCmd(rng)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		// Apply onto a cluster with a session owning shard 0, so that shard
		// commands can take effect.
		base := &applier{t: t, f: New()}
		base.do(initCluster(8))
		base.do(createSession("s"))
		base.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "s"}))
		before := stateBytes(t, base.f)
		r := base.f.Apply(&raft.Log{Index: base.index + 1, Type: raft.LogCommand, Data: b}).(Result)
		if err != nil {
			if r.Err == nil || !bytes.Equal(before, stateBytes(t, base.f)) {
				t.Fatalf("undecodable command applied: apply err %v", r.Err)
			}
			return
		}
		if r.Err != nil && !bytes.Equal(before, stateBytes(t, base.f)) {
			t.Fatalf("a rejected command changed the state: %v", r.Err)
		}
		// A decoded command re-encodes to something that decodes the same;
		// a compact shard command to the very same bytes.
		b2, err := Encode(c)
		if err != nil {
			return
		}
		if c2, err := Decode(b2); err != nil || (c.Shard != nil && (c2.Op != c.Op || c2.Shard.Force != c.Shard.Force ||
			!slices.Equal(c2.Shard.Items, c.Shard.Items))) {
			t.Fatalf("re-encoded command decodes to %+v, %v; was %+v", c2, err, c)
		}
		if b[0] == ShardCommandVersion && !bytes.Equal(b2, b) {
			t.Fatalf("compact shard command re-encodes to %x, was %x", b2, b)
		}
	})
}

func FuzzRestore(f *testing.F) {
	a := New()
	applyAll(a, testLog(&testing.T{}))
	s, _ := a.EncodeSnapshot()
	f.Add(s)
	b := &applier{t: &testing.T{}, f: New()}
	b.do(initCluster(4))
	b.do(createSession("s"))
	b.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 2, Session: "s"}))
	s, _ = b.f.EncodeSnapshot()
	f.Add(s)
	b.do(semAcquire("s", "sem", 1, 1, true))
	b.do(createSession("t"))
	b.do(semAcquire("t", "sem", 1, 1, true))
	s, _ = b.f.EncodeSnapshot()
	f.Add(s)
	f.Add([]byte{SnapshotVersion})
	f.Add([]byte{SnapshotVersion, 0x82, 0xa5})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := New()
		_ = n.Restore(io.NopCloser(bytes.NewReader(b)))
	})
}
