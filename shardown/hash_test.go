package shardown

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
)

// These vectors pin ShardFor forever: a change here re-homes every key of
// every deployment. The jump values were cross-checked against an
// independent transcription of the published algorithm.
func TestShardForKnownVectors(t *testing.T) {
	cases := []struct {
		key  string
		fnv  uint64
		want [4]ShardID // shards = 1, 16, 256, 1024
	}{
		{"", 0xcbf29ce484222325, [4]ShardID{0, 13, 90, 266}},
		{"a", 0xaf63dc4c8601ec8c, [4]ShardID{0, 12, 163, 163}},
		{"foobar", 0x85944171f73967e8, [4]ShardID{0, 5, 254, 635}},
		{"user:42", 0x6c151ea4dcd221c2, [4]ShardID{0, 15, 206, 295}},
		{"holdfast", 0x27fb6af072422446, [4]ShardID{0, 2, 156, 279}},
	}
	for _, c := range cases {
		if got := fnv1a64([]byte(c.key)); got != c.fnv {
			t.Errorf("fnv1a64(%q) = %#x, want %#x", c.key, got, c.fnv)
		}
		h := fnv.New64a()
		h.Write([]byte(c.key))
		if h.Sum64() != c.fnv {
			t.Errorf("hash/fnv disagrees on %q", c.key)
		}
		for i, n := range []int{1, 16, 256, 1024} {
			if got := ShardFor([]byte(c.key), n); got != c.want[i] {
				t.Errorf("ShardFor(%q, %d) = %d, want %d", c.key, n, got, c.want[i])
			}
		}
	}
}

func TestJumpKnownVectors(t *testing.T) {
	cases := []struct {
		key  uint64
		n    int
		want int64
	}{
		{0, 1, 0}, {0, 100, 0}, {1, 100, 55}, {0xdeadbeef, 1000, 285},
		{0xffffffffffffffff, 1 << 20, 589430},
	}
	for _, c := range cases {
		if got := jump(c.key, c.n); got != c.want {
			t.Errorf("jump(%#x, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
}

func TestShardForDegenerate(t *testing.T) {
	for _, n := range []int{0, -5} {
		if got := ShardFor([]byte("x"), n); got != 0 {
			t.Errorf("ShardFor(x, %d) = %d, want 0", n, got)
		}
	}
}

// Keys spread evenly over shards. A perfect random hash puts 100k keys on
// 256 shards with a per-shard standard deviation of ~5% of the mean, so a
// ±10% bound on every shard would fail for it too; the test therefore uses
// 1M keys (σ ≈ 1.6%) for the ±10% bound and a chi-square check at 100k.
func TestShardForUniform(t *testing.T) {
	t.Parallel()
	const shards = 256
	for _, keys := range []int{100_000, 1_000_000} {
		var count [shards]int
		var buf [8]byte
		for i := range keys {
			binary.BigEndian.PutUint64(buf[:], uint64(i))
			count[ShardFor(buf[:], shards)]++
		}
		mean := float64(keys) / shards
		lo, hi, chi2 := keys, 0, 0.0
		for _, c := range count {
			lo, hi = min(lo, c), max(hi, c)
			chi2 += (float64(c) - mean) * (float64(c) - mean) / mean
		}
		t.Logf("%d keys: per-shard counts in [%d, %d], mean %.1f, chi2 %.1f (255 dof)", keys, lo, hi, mean, chi2)
		// 255 degrees of freedom: chi2 above 340 has p < 0.001.
		if chi2 > 340 {
			t.Errorf("%d keys: chi2 = %.1f, distribution is not uniform", keys, chi2)
		}
		if keys >= 1_000_000 && (float64(lo) < 0.9*mean || float64(hi) > 1.1*mean) {
			t.Errorf("%d keys: counts in [%d, %d], want within 10%% of %.1f", keys, lo, hi, mean)
		}
	}
}

// Growing the shard count moves only keys that land in the new shards
// (jump hash's monotonicity), a useful property if a table is ever re-created.
func TestShardForMonotone(t *testing.T) {
	for i := range 10_000 {
		k := binary.BigEndian.AppendUint32(nil, uint32(i))
		a, b := ShardFor(k, 100), ShardFor(k, 101)
		if a != b && b != 100 {
			t.Fatalf("key %d moved %d -> %d when adding shard 100", i, a, b)
		}
	}
}

func BenchmarkShardFor(b *testing.B) {
	k := []byte("user:1234567890")
	for b.Loop() {
		ShardFor(k, 1024)
	}
}
