package shardown

// FNV-1a 64-bit parameters (http://www.isthe.com/chongo/tech/comp/fnv/).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// jumpMultiplier is the 64-bit linear congruential multiplier of the jump
// consistent hash (Lamping and Veach, "A Fast, Minimal Memory, Consistent
// Hash Algorithm", 2014).
const jumpMultiplier = 2862933555777941757

// ShardFor maps a key to one of shards shards. The mapping is part of the
// package's compatibility promise and never changes across releases:
//
//  1. h = FNV-1a 64 of key (offset basis 14695981039346656037, prime
//     1099511628211, one byte at a time: h ^= b; h *= prime);
//  2. the shard is the jump consistent hash of h over shards buckets,
//     exactly as published by Lamping and Veach (see jump below).
//
// Known vectors are pinned by the package tests. For shards <= 0 ShardFor
// returns 0; it never panics.
func ShardFor(key []byte, shards int) ShardID {
	if shards <= 0 {
		return 0
	}
	return ShardID(jump(fnv1a64(key), shards))
}

// fnv1a64 is the 64-bit FNV-1a hash of b (hash/fnv's New64a, inlined to
// avoid an allocation per key).
func fnv1a64(b []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// jump is the jump consistent hash of key over n buckets, returning a bucket
// in [0, n). It uses only integer arithmetic and IEEE float64 multiply and
// divide, so it gives the same answer on every platform.
func jump(key uint64, n int) int64 {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*jumpMultiplier + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return b
}
