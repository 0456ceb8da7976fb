package fsm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// toWire and encodeWire are the reference encoding of a snapshot: the
// whole state as wireSnapshot, encoded by reflection. The streaming
// writer must produce the same bytes.
func toWire(d snapshotData) wireSnapshot {
	v := View{st: d.State}
	return wireSnapshot{
		Index:     d.Index,
		Cluster:   d.State.Cluster,
		LastToken: d.State.LastToken,
		Sessions:  v.Sessions(),
		Leases:    v.Leases(),
		Shards:    v.Shards(),
		// The index of the table's last change.
		ShardsIndex: d.State.ShardsIndex,
	}
}

func encodeWire(w wireSnapshot) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(SnapshotVersion)
	if err := msgpack.NewEncoder(&buf).Encode(w); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestSnapshotWriterMatchesReference checks that the streaming snapshot
// writer gives the bytes of the reference encoding, over random shard
// histories (every state, lease and session shape they reach), and that
// Persist writes the same bytes.
func TestSnapshotWriterMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		a := &applier{t: t, f: New()}
		if seed > 1 {
			a.do(initCluster(uint32(1 + rng.IntN(300))))
		}
		for i := range 200 {
			if a.f.View().ShardCount() > 0 {
				a.do(randomShardCommand(rng, a.f.View(), i))
			}
			if i%25 != 0 {
				continue
			}
			v := a.f.View()
			d := snapshotData{Index: v.index, State: v.st}
			want, err := encodeWire(toWire(d))
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeSnapshot(d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d step %d: the streamed snapshot differs from the reference", seed, i)
			}
			snap, _ := a.f.Snapshot()
			var s sink
			if err := snap.Persist(&s); err != nil || !bytes.Equal(s.Bytes(), want) {
				t.Fatalf("seed %d step %d: Persist wrote other bytes (err %v)", seed, i, err)
			}
		}
	}
}

// TestAppendShardMatchesMsgpack checks the hand-written encoding of a
// snapshot's shard against msgpack's own encoding of Shard, over strings
// of every length class (fixstr, str8, str16) and empty and full numbers.
func TestAppendShardMatchesMsgpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 4))
	str := func() string {
		return strings.Repeat("x", []int{0, 0, 1, 31, 32, 255, 256, 300, 70_000}[rng.IntN(9)])
	}
	num := func() uint64 { return []uint64{0, 1, 1 << 40, math.MaxUint64}[rng.IntN(4)] }
	for i := range 500 {
		s := Shard{ID: rng.Uint32(), State: ShardState(rng.IntN(3)), Owner: str(), OwnerNode: str(), OwnerNodeID: str(),
			OwnerAddr: str(), Token: num(), Granted: num(), Revoked: num(), To: str()}
		want, err := msgpack.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendShard(nil, &s); !bytes.Equal(got, want) {
			t.Fatalf("shard %d %+v: appended %x, msgpack %x", i, s, got[:min(len(got), 64)], want[:min(len(want), 64)])
		}
	}
}
