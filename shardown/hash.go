package shardown

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// ShardFor maps a key to one of shards shards. The mapping is part of the
// package's compatibility promise and never changes across releases:
//
//  1. h = XXH64(key, seed 0), the 64-bit xxHash of the key as specified by
//     its author (https://github.com/Cyan4973/xxHash, doc/xxhash_spec.md);
//  2. the shard is the high 64 bits of the 128-bit product h × shards,
//     that is floor(h × shards / 2^64) (Lemire's multiply-shift reduction).
//
// The shard count of a cluster is fixed when it is created, so the mapping
// needs no consistency under a changing count; what it needs is to be
// uniform, identical on every platform, and fast. Known vectors are pinned
// by the package tests. For shards <= 0 ShardFor returns 0; it never
// panics and never allocates.
func ShardFor(key []byte, shards int) ShardID {
	if shards <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(xxhash.Sum64(key), uint64(shards))
	return ShardID(hi)
}
