package shardown

import (
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// These vectors pin ShardFor forever: a change here re-homes every key of
// every deployment. The xxh64 values of "" and "abc" are the published
// reference vectors of XXH64 with seed 0.
func TestShardForKnownVectors(t *testing.T) {
	cases := []struct {
		key  string
		h    uint64
		want [4]ShardID // shards = 1, 16, 256, 1024
	}{
		{"", 0xef46db3751d8e999, [4]ShardID{0, 14, 239, 957}},
		{"abc", 0x44bc2cf5ad770999, [4]ShardID{0, 4, 68, 274}},
	}
	for _, c := range cases {
		if got := xxhash.Sum64String(c.key); got != c.h {
			t.Errorf("xxh64(%q) = %#x, want %#x", c.key, got, c.h)
		}
		for i, n := range []int{1, 16, 256, 1024} {
			if got := ShardFor([]byte(c.key), n); got != c.want[i] {
				t.Errorf("ShardFor(%q, %d) = %d, want %d", c.key, n, got, c.want[i])
			}
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

// ShardFor is floor(h·n / 2^64): compare with big-integer arithmetic.
func TestShardForIsMultiplyShift(t *testing.T) {
	for i := range 10_000 {
		k := binary.BigEndian.AppendUint32(nil, uint32(i))
		n := 1 + i%5000
		h := new(big.Int).SetUint64(xxhash.Sum64(k))
		want := new(big.Int).Rsh(h.Mul(h, big.NewInt(int64(n))), 64).Int64()
		if got := ShardFor(k, n); int64(got) != want || int(got) >= n {
			t.Fatalf("ShardFor(key %d, %d) = %d, want %d", i, n, got, want)
		}
	}
}

// BenchmarkShardFor measures mapping a 15-byte key over 1024 shards.
func BenchmarkShardFor(b *testing.B) {
	k := []byte("user:1234567890")
	for b.Loop() {
		ShardFor(k, 1024)
	}
}
