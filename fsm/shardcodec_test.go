package fsm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// encodeV1 returns a shard command as releases before ShardCommandVersion
// encoded it: version 1 and a msgpack body.
func encodeV1(tb testing.TB, op Op, c *ShardCmd) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.WriteByte(CommandVersion)
	buf.WriteByte(byte(op))
	if err := msgpack.NewEncoder(&buf).Encode(c); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// v1ShardCommands are the commands of testdata/shard-commands-v1.golden,
// which the release before ShardCommandVersion encoded (msgpack bodies).
var v1ShardCommands = []Command{
	shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "sa"}, ShardItem{Shard: 1, Session: "sb"}, ShardItem{Shard: 2, Session: "sa"}),
	shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: "sa", Token: 1, To: "sb"}, ShardItem{Shard: 2, Session: "sa", Token: 3}),
	shardCmd(OpShardRelease, false, ShardItem{Shard: 1, Session: "sb", Token: 2}),
	shardCmd(OpShardRelease, true, ShardItem{Shard: 0, Session: "sa", Token: 1}),
}

func readV1ShardCommands(t testing.TB) [][]byte {
	raw, err := os.ReadFile(filepath.Join("testdata", "shard-commands-v1.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, line := range strings.Fields(string(raw)) {
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestShardCommandV1Decodes checks that shard commands in the msgpack
// form of version 1 still decode to the same commands, and that a log of
// them applies to the same state as the same commands in today's encoding.
func TestShardCommandV1Decodes(t *testing.T) {
	old := readV1ShardCommands(t)
	if len(old) != len(v1ShardCommands) {
		t.Fatalf("%d golden commands, want %d", len(old), len(v1ShardCommands))
	}
	a, b := &applier{t: t, f: New()}, &applier{t: t, f: New()}
	for _, x := range []*applier{a, b} {
		x.do(initCluster(4))
		x.do(createSession("sa"))
		x.do(createSession("sb"))
	}
	for i, raw := range old {
		if !bytes.Equal(raw, encodeV1(t, v1ShardCommands[i].Op, v1ShardCommands[i].Shard)) {
			t.Fatalf("golden command %d is not the msgpack form", i)
		}
		c, err := Decode(raw)
		if err != nil || !reflect.DeepEqual(c, v1ShardCommands[i]) {
			t.Fatalf("golden command %d decodes to %+v, %v", i, c.Shard, err)
		}
		now := mustEncode(t, c)
		if now[0] != ShardCommandVersion || len(now) >= len(raw) {
			t.Fatalf("command %d re-encodes as version %d in %d bytes (was %d)", i, now[0], len(now), len(raw))
		}
		a.index++
		ra := a.f.Apply(rawLog(a.index, raw)).(Result)
		if rb := b.do(c); ra.Err != nil || ra.Count == 0 || ra.Count != rb.Count {
			t.Fatalf("command %d: v1 applied %+v, v2 %+v", i, ra, rb)
		}
	}
	if !bytes.Equal(stateBytes(t, a.f), stateBytes(t, b.f)) {
		t.Fatal("the v1 log and the v2 log leave different states")
	}
}

// randomShardCmd returns a shard command with IDs drawn from a few, empty
// targets and tokens of every size.
func randomShardCmd(rng *rand.Rand) Command {
	ids := []string{"a", "bb", strings.Repeat("c", 200), sessionIDOf(7), "é"}
	c := &ShardCmd{Force: rng.IntN(2) == 0}
	for range 1 + rng.IntN(50) {
		it := ShardItem{Shard: rng.Uint32() >> rng.IntN(32), Session: ids[rng.IntN(len(ids))],
			Token: rng.Uint64() >> rng.IntN(64)}
		if rng.IntN(3) == 0 {
			it.To = ids[rng.IntN(len(ids))]
		}
		c.Items = append(c.Items, it)
	}
	return Command{Op: []Op{OpShardGrant, OpShardRevoke, OpShardRelease}[rng.IntN(3)], Shard: c}
}

// TestShardCodecRoundTrip checks that random shard commands decode to
// themselves and that a decoded command encodes to the very same bytes.
func TestShardCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	for i := range 2000 {
		c := randomShardCmd(rng)
		b := mustEncode(t, c)
		d, err := Decode(b)
		if err != nil || !reflect.DeepEqual(d, c) {
			t.Fatalf("command %d: decodes to %+v, %v; want %+v", i, d.Shard, err, c.Shard)
		}
		if again := mustEncode(t, d); !bytes.Equal(again, b) {
			t.Fatalf("command %d re-encodes differently", i)
		}
	}
}

// TestShardCodecRejects checks that Decode rejects, with ErrMalformed,
// every truncation of a command, trailing bytes, and bodies Encode could
// not have written.
func TestShardCodecRejects(t *testing.T) {
	good := mustEncode(t, shardCmd(OpShardRevoke, false, ShardItem{Shard: 300, Session: "s", Token: 9, To: "t"},
		ShardItem{Shard: 1, Session: "t", Token: 1}))
	for n := 2; n < len(good); n++ {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	hdr := []byte{ShardCommandVersion, byte(OpShardGrant)}
	body := func(b ...byte) []byte { return append(append([]byte(nil), hdr...), b...) }
	bad := map[string][]byte{
		"trailing byte":       append(append([]byte(nil), good...), 0),
		"flags":               body(2, 1, 1, 's', 1, 0, 0, 0, 0),
		"long varint":         body(0, 1, 1, 's', 1, 0x80, 0, 0, 0, 0),
		"unused string":       body(0, 2, 1, 's', 1, 't', 1, 0, 0, 0, 0),
		"strings out of use":  body(0, 2, 1, 's', 1, 't', 1, 0, 1, 0, 0),
		"string twice":        body(0, 2, 1, 's', 1, 's', 2, 0, 0, 0, 0, 1, 1, 0, 0),
		"target is empty":     body(0, 2, 1, 's', 0, 1, 0, 0, 0, 2),
		"session index":       body(0, 1, 1, 's', 1, 0, 1, 0, 0),
		"target index":        body(0, 1, 1, 's', 1, 0, 0, 0, 3),
		"shard over 32 bits":  body(0, 1, 1, 's', 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0),
		"token over 64 bits":  body(0, 1, 1, 's', 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0),
		"item count":          body(0, 1, 1, 's', 9, 0, 0, 0, 0),
		"string past the end": body(0, 1, 40, 's'),
		"empty":               body(),
		"non-shard op":        {ShardCommandVersion, byte(OpNoop)},
	}
	for name, b := range bad {
		if c, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decoded %+v, %v", name, c.Shard, err)
		}
	}
	// The largest values decode.
	max := shardCmd(OpShardRelease, true, ShardItem{Shard: math.MaxUint32, Session: "s", Token: math.MaxUint64})
	if d, err := Decode(mustEncode(t, max)); err != nil || !reflect.DeepEqual(d, max) {
		t.Fatalf("largest values: %+v, %v", d.Shard, err)
	}
}

// BenchmarkDecodeShardCmd measures decoding a 1,000-item release with
// coordinator-sized session IDs, as every replica does for each one.
func BenchmarkDecodeShardCmd(b *testing.B) {
	c := &ShardCmd{}
	for i := range 1000 {
		c.Items = append(c.Items, ShardItem{Shard: uint32(i * 97 % 100_000), Session: sessionIDOf(i % 64), Token: uint64(1e6 + i)})
	}
	for _, form := range []string{"v1 msgpack", "v2 compact"} {
		data := mustEncode(b, Command{Op: OpShardRelease, Shard: c})
		if form == "v1 msgpack" {
			data = encodeV1(b, OpShardRelease, c)
		}
		b.Run(form, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestApplyReusesItemsBuffer checks that Apply, which decodes every shard
// command's items into one buffer, carries nothing of one command's items
// into the next: a revoke without a target after one with a target.
func TestApplyReusesItemsBuffer(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(initCluster(4))
	a.do(createSession("a"))
	a.do(createSession("b"))
	a.do(shardCmd(OpShardGrant, false, ShardItem{Shard: 0, Session: "a"}, ShardItem{Shard: 1, Session: "a"}))
	tok := func(id uint32) uint64 { s, _ := a.f.View().Shard(id); return s.Token }
	a.do(shardCmd(OpShardRevoke, false, ShardItem{Shard: 0, Session: "a", Token: tok(0), To: "b"}))
	a.do(shardCmd(OpShardRevoke, false, ShardItem{Shard: 1, Session: "a", Token: tok(1)}))
	if s, _ := a.f.View().Shard(1); s.State != ShardRevoking || s.To != "" {
		t.Fatalf("shard 1 after a revoke without a target: %+v", s)
	}
	if s, _ := a.f.View().Shard(0); s.To != "b" {
		t.Fatalf("shard 0 after a revoke to b: %+v", s)
	}
}
