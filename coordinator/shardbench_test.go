package coordinator_test

import (
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// ownedCluster starts one node on loopback TCP with 256 shards and waits
// until every shard is owned (lookups are local: a single node keeps the
// other nodes' heartbeats off the two cores being measured).
func ownedCluster(b *testing.B) *holdfasttest.Cluster {
	b.Helper()
	cl := holdfasttest.Start(b, holdfasttest.Options{Nodes: 1, Voters: 1, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = 256
	}})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("every shard owned", formTimeout, func() error {
		for s := 0; s < 256; s++ {
			if _, ok := cl.Node(0).C().Owner(coordinator.ShardID(s)); !ok {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	return cl
}

// BenchmarkOwner measures the in-process ownership lookup as a caller uses
// it: one load of the replica's view, one table read, and the holder's
// token and session read. (A loop that read only ok measured 7 ns where a
// caller reading the holder paid 22: see ownerInto.)
func BenchmarkOwner(b *testing.B) {
	c := ownedCluster(b).Node(0).C()
	b.ReportAllocs()
	i := 0
	var sum uint64
	for b.Loop() {
		h, ok := c.Owner(coordinator.ShardID(i & 255))
		if !ok {
			b.Fatal("unowned shard")
		}
		sum += h.Token + uint64(len(h.Session))
		i++
	}
	if sum == 0 { // tokens start at 1; the check also keeps the reads
		b.Fatal("no token read")
	}
}

// BenchmarkShardFor measures mapping 16-byte keys (1,024 distinct ones,
// in turn) to their shards.
func BenchmarkShardFor(b *testing.B) {
	c := ownedCluster(b).Node(0).C()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%011d", i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if c.ShardFor(keys[i&1023]) >= 256 {
			b.Fatal("shard out of range")
		}
		i++
	}
}
