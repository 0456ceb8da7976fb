package coordinator_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// benchCluster starts 3 voters on loopback TCP with bbolt's fsync on (the
// default) and waits for every node's session.
func benchCluster(b *testing.B) *holdfasttest.Cluster {
	b.Helper()
	cl := holdfasttest.Start(b, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("every node in a session", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	return cl
}

// BenchmarkAcquireRelease measures acquire + release round trips of one
// named lease: by one contender, and by 8 contenders on 3 nodes.
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("uncontended", func(b *testing.B) {
		cl := benchCluster(b)
		c := cl.Node(1).C()
		ctx := context.Background()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			l, err := c.Acquire(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
	})
	b.Run("contended-8", func(b *testing.B) {
		cl := benchCluster(b)
		ctx := context.Background()
		var left atomic.Int64
		left.Store(int64(b.N))
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < 8; i++ {
			c := cl.Node(i % 3).C()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					l, err := c.Acquire(ctx, "bench")
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
	})
}

// BenchmarkKeepAlive measures keepalives answered by the leader, sent by
// the two followers concurrently. Keepalives are not replicated: each is
// one RPC plus a share of a batched leadership confirmation.
func BenchmarkKeepAlive(b *testing.B) {
	cl := benchCluster(b)
	leader := cl.WaitLeader(formTimeout)
	var followers []*holdfasttest.Node
	for _, n := range cl.Running() {
		if n != leader {
			followers = append(followers, n)
		}
	}
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := followers[next.Add(1)%int64(len(followers))].C()
		for pb.Next() {
			if err := c.KeepAliveNow(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "keepalives/s")
}

// BenchmarkLeaderLocal measures reading a lease's holder and token from the
// local replica.
func BenchmarkLeaderLocal(b *testing.B) {
	cl := benchCluster(b)
	c := cl.Node(0).C()
	l, err := c.Acquire(context.Background(), "scheduler")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, ok := c.Holder("scheduler")
		if !ok || h.Token != l.Token() {
			b.Fatal("wrong holder")
		}
	}
}
