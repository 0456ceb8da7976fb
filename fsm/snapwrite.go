package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math"

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
	Pins        []Pin       `msgpack:"pins,omitempty"`
	Rules       []Rule      `msgpack:"rules,omitempty"`
}

// wireShards encodes a view's shard table as the msgpack array of Shard
// maps that encoding a []Shard gives (the same keys, the same omitted
// empty fields, the same fixed-width integers), one shard at a time.
type wireShards struct{ v *View }

// EncodeMsgpack implements msgpack.CustomEncoder. It writes the shards
// through the encoder's writer in batches, each appended by hand.
func (w wireShards) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(w.v.ShardCount()); err != nil {
		return err
	}
	out := enc.Writer()
	buf := make([]byte, 0, 64<<10)
	var err error
	w.v.EachShard(func(s Shard) bool {
		buf = appendShard(buf, &s)
		if len(buf) >= 60<<10 {
			_, err = out.Write(buf)
			buf = buf[:0]
		}
		return err == nil
	})
	if err == nil && len(buf) > 0 {
		_, err = out.Write(buf)
	}
	return err
}

// appendShard appends s as msgpack encodes a Shard: the map of its
// non-empty fields (ID and State always) in declaration order, integers
// at their fixed widths.
func appendShard(b []byte, s *Shard) []byte {
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
	b = append(b, 0x80|byte(n)) // fixmap: at most 10 fields
	b = appendMsgpackStr(b, "id")
	b = append(b, 0xce, byte(s.ID>>24), byte(s.ID>>16), byte(s.ID>>8), byte(s.ID)) // uint32
	b = appendMsgpackStr(b, "state")
	b = append(b, 0xcc, byte(s.State)) // uint8
	for _, f := range strs {
		if f.val != "" {
			b = appendMsgpackStr(appendMsgpackStr(b, f.key), f.val)
		}
	}
	for _, f := range nums {
		if f.val != 0 {
			b = append(appendMsgpackStr(b, f.key), 0xcf) // uint64
			b = binary.BigEndian.AppendUint64(b, f.val)
		}
	}
	if s.To != "" {
		b = appendMsgpackStr(appendMsgpackStr(b, "to"), s.To)
	}
	return b
}

// appendMsgpackStr appends v as msgpack encodes a string: fixstr, str8,
// str16 or str32 by length.
func appendMsgpackStr(b []byte, v string) []byte {
	switch l := len(v); {
	case l < 32:
		b = append(b, 0xa0|byte(l))
	case l < 256:
		b = append(b, 0xd9, byte(l))
	case l <= math.MaxUint16:
		b = append(b, 0xda, byte(l>>8), byte(l))
	default:
		b = append(b, 0xdb)
		b = binary.BigEndian.AppendUint32(b, uint32(l))
	}
	return append(b, v...)
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
		Semaphores: v.Semaphores(), Pins: v.Pins(), Rules: v.Rules()}
	version := byte(SnapshotVersion)
	if leasesCarryValues(out.Leases) {
		version = SnapshotValueVersion
	}
	if len(out.Pins) > 0 {
		version = SnapshotPinVersion
	}
	if d.State.carriesRules() {
		version = SnapshotRuleVersion
	}
	if _, err := w.Write([]byte{version}); err != nil {
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
