package shards

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// BenchmarkLeaseMemory reports the live heap each owned shard costs on the
// owner side (B/lease): a Manager syncs a view that grants every shard to
// its session, and the heap is read once the leases are live and their
// Serve callbacks returned (none: no callback; waiting: a callback that
// waits on the lease's context, as a shard's worker does).
func BenchmarkLeaseMemory(b *testing.B) {
	for _, c := range []struct {
		name    string
		acquire func(ctx context.Context, l *Lease)
	}{
		{"none", nil},
		{"waiting", func(ctx context.Context, _ *Lease) { <-ctx.Done() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			const n = 20_000
			var per float64
			for range b.N {
				per = leaseBytes(b, n, c.acquire)
			}
			b.ReportMetric(per, "B/lease")
		})
	}
}

// leaseBytes grants n shards to one session, lets a Manager start their
// leases, and returns the live heap that added per lease.
func leaseBytes(b *testing.B, n int, acquire func(context.Context, *Lease)) float64 {
	b.Helper()
	r := newReplica(b, n)
	r.session("s", ttl, false)
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i)
	}
	for len(ids) > 0 {
		k := min(len(ids), 1000)
		r.grant("s", ids[:k]...)
		ids = ids[k:]
	}
	s := session.New(context.Background(), "s", ttl, &testkit.Clock{}, time.Hour)
	s.Extend(time.Now().Add(time.Hour), time.Hour)
	m := NewManager(Options[*Lease]{
		View:    r.view,
		Session: func() (*session.Session, <-chan struct{}) { return s, nil },
		Commit:  func(context.Context, fsm.Command) error { return nil },
		Wrap:    func(l *Lease) *Lease { return l },
		Serve:   acquire,
		NodeID:  "n-s",
		Errors:  Errors{Lost: errLost, Revoked: errRevoked, Shutdown: errShutdown},
	})
	v := r.view()
	g0 := runtime.NumGoroutine()
	before := liveHeap()
	m.Sync(v, s)
	if got := m.Count(); got != n {
		b.Fatalf("%d leases, want %d", got, n)
	}
	if acquire == nil { // wait for any callback goroutines to exit
		testkit.Eventually(b, "Serve callbacks returned", 10*time.Second, testkit.Holds(func() bool { return runtime.NumGoroutine() <= g0 }))
	}
	after := liveHeap()
	runtime.KeepAlive(v)
	m.Close()
	s.End(errShutdown)
	return float64(after-before) / float64(n)
}

// liveHeap returns the live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
