package fsm

import (
	"bufio"
	"bytes"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// wireSnapshotOut is what a snapshot is written from: wireSnapshot with
// the shard table streamed from the view's pages instead of copied into a
// []Shard first. Its fields, names and order are wireSnapshot's, so the
// bytes are the same as encoding wireSnapshot.
type wireSnapshotOut struct {
	Index       uint64      `msgpack:"index"`
	Cluster     Cluster     `msgpack:"cluster"`
	LastToken   uint64      `msgpack:"last_token"`
	Sessions    []Session   `msgpack:"sessions"`
	Leases      []Lease     `msgpack:"leases"`
	Shards      wireShards  `msgpack:"shards"`
	ShardsIndex uint64      `msgpack:"shards_index"`
	Semaphores  []Semaphore `msgpack:"semaphores,omitempty"`
}

// wireShards encodes a view's shard table as the msgpack array of Shard
// maps that encoding a []Shard gives (the same keys, the same omitted
// empty fields, the same fixed-width integers), one shard at a time.
type wireShards struct{ v *View }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (w wireShards) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(w.v.ShardCount()); err != nil {
		return err
	}
	var err error
	w.v.EachShard(func(s Shard) bool {
		err = encodeShard(enc, &s)
		return err == nil
	})
	return err
}

// encodeShard writes s as the msgpack map of its non-empty fields (ID and
// State always), in declaration order.
func encodeShard(enc *msgpack.Encoder, s *Shard) error {
	strs := [...]struct{ key, val string }{
		{"owner", s.Owner}, {"node", s.OwnerNode}, {"nid", s.OwnerNodeID}, {"addr", s.OwnerAddr}}
	nums := [...]struct {
		key string
		val uint64
	}{{"token", s.Token}, {"granted", s.Granted}, {"revoked", s.Revoked}}
	n := 2
	for _, f := range strs {
		n += boolInt(f.val != "")
	}
	for _, f := range nums {
		n += boolInt(f.val != 0)
	}
	n += boolInt(s.To != "")
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	_ = enc.EncodeString("id")
	_ = enc.EncodeUint32(s.ID)
	_ = enc.EncodeString("state")
	_ = enc.EncodeUint8(uint8(s.State))
	for _, f := range strs {
		if f.val != "" {
			_ = enc.EncodeString(f.key)
			_ = enc.EncodeString(f.val)
		}
	}
	for _, f := range nums {
		if f.val != 0 {
			_ = enc.EncodeString(f.key)
			_ = enc.EncodeUint64(f.val)
		}
	}
	if s.To != "" {
		_ = enc.EncodeString("to")
		return enc.EncodeString(s.To)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeSnapshot writes the snapshot of d to w: the version byte and the
// msgpack body, the shard table streamed.
func writeSnapshot(w io.Writer, d snapshotData) error {
	v := &View{st: d.State}
	out := wireSnapshotOut{Index: d.Index, Cluster: d.State.Cluster, LastToken: d.State.LastToken,
		Sessions: v.Sessions(), Leases: v.Leases(), Shards: wireShards{v}, ShardsIndex: d.State.ShardsIndex,
		Semaphores: v.Semaphores()}
	if _, err := w.Write([]byte{SnapshotVersion}); err != nil {
		return err
	}
	return msgpack.NewEncoder(w).Encode(&out)
}

func encodeSnapshot(d snapshotData) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// persist writes the snapshot of d to w through a buffer.
func persist(w io.Writer, d snapshotData) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeSnapshot(bw, d); err != nil {
		return err
	}
	return bw.Flush()
}
