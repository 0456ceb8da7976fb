package main

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// ownerValue is what the etcd key of a shard holds: the same fields
// Owner returns.
func ownerValue(o coordinator.Holder) string {
	return fmt.Sprintf("node=%s id=%s addr=%s session=%s token=%d", o.Node, o.NodeID, o.Addr, o.Session, o.Token)
}

// etcdLoadShards writes one key per shard holding its owner as holdfast's
// table shows it, in transactions of 128 puts (etcd's default limit).
func etcdLoadShards(cli *clientv3.Client, c *coordinator.Coordinator, shards int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t := c.Table()
	var ops []clientv3.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		ops = ops[:0]
		return err
	}
	for s := 0; s < shards; s++ {
		o, _ := t.Owner(coordinator.ShardID(s))
		ops = append(ops, clientv3.OpPut(shardKey(s), ownerValue(o)))
		if len(ops) == 128 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
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

// etcdLookup returns the mean time of one Get of a shard's key over at
// least d, one request at a time, and each Get's latency. Serializable
// Gets are answered by the member the client reached without consulting
// the leader; the default (linearizable) ones are not.
func etcdLookup(cli *clientv3.Client, shards int, d time.Duration, serializable bool) (float64, latencies, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var opts []clientv3.OpOption
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	var lat latencies
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		r, err := cli.Get(ctx, shardKey(i%shards), opts...)
		if err != nil {
			return 0, nil, err
		}
		if len(r.Kvs) != 1 {
			return 0, nil, fmt.Errorf("shard key %d missing", i%shards)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	return float64(elapsed.Nanoseconds()) / float64(len(lat)), lat, nil
}
