package main

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

const shardPrefix = "/holdfast-bench/shards/"

func shardKey(s int) string { return fmt.Sprintf("%s%06d", shardPrefix, s) }

// allOwned reports nil once c's replica shows every shard owned.
func allOwned(c *coordinator.Coordinator, shards int) func() error {
	return func() error {
		t := c.Table()
		if t.Len() != shards {
			return fmt.Errorf("%w: table has %d shards", errNotYet, t.Len())
		}
		for s := 0; s < shards; s++ {
			if _, ok := t.Owner(coordinator.ShardID(s)); !ok {
				return fmt.Errorf("%w: shard %d free", errNotYet, s)
			}
		}
		return nil
	}
}

// ownerValue is what a peer's record of a shard holds: the same fields
// Owner returns.
func ownerValue(o coordinator.Holder) string {
	return fmt.Sprintf("node=%s id=%s addr=%s session=%s token=%d", o.Node, o.Node.ID, o.Addr, o.Session, o.Token)
}

// sink keeps the compiler from dropping the lookups.
var sink uint64

// hfLookup returns the mean time of Owner(shard) over at least d, cycling
// through the shards. The next shard is a counter that wraps, not a
// modulo: a 64-bit division costs about as much as Owner itself.
func hfLookup(c *coordinator.Coordinator, shards int, d time.Duration) (nsPerOp float64, err error) {
	const batch = 1 << 16
	var sum uint64
	n, s := 0, 0
	start := time.Now()
	for time.Since(start) < d {
		for i := 0; i < batch; i++ {
			o, ok := c.Owner(coordinator.ShardID(s))
			if !ok {
				return 0, fmt.Errorf("shard %d not owned", s)
			}
			sum += o.Token
			if s++; s == shards {
				s = 0
			}
		}
		n += batch
	}
	elapsed := time.Since(start)
	sink += sum
	return float64(elapsed.Nanoseconds()) / float64(n), nil
}

// shardValues returns each shard's owner value as c's table shows it.
func shardValues(c *coordinator.Coordinator, shards int) []string {
	t := c.Table()
	out := make([]string, shards)
	for s := range out {
		o, _ := t.Owner(coordinator.ShardID(s))
		out[s] = ownerValue(o)
	}
	return out
}

// memOwnerValue is shard s's record in workload 6: an owner value of the
// size holdfast's would have.
func memOwnerValue(s int) string {
	return fmt.Sprintf("node=mem%d id=%032x addr=127.0.0.1:%d session=%032x token=%d", s%3, s%3, 40000+s%3, s%3, s+1)
}

// timeReads returns the mean time of read(shard) over at least d, one
// read at a time cycling through the shards, and each read's latency.
func timeReads(shards int, d time.Duration, read func(shard int) error) (float64, latencies, error) {
	var lat latencies
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		if err := read(i % shards); err != nil {
			return 0, nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	return float64(elapsed.Nanoseconds()) / float64(len(lat)), lat, nil
}
