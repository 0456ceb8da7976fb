package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// TestHealthyTLSClusterCountsNoRefusals: a healthy three-node TLS cluster
// on loopback under load (every node acquiring and releasing leases and
// calling Sync, so keepalives, forwards and confirmation rounds run all the
// time) for 30 s counts no refused connection or frame on any node: a
// refusal counter (holdfast_transport_refused_total, and its alert) must
// mean a stranger or a misconfiguration, never the cluster's own traffic.
func TestHealthyTLSClusterCountsNoRefusals(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true})
	cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	nodes := cl.Running()
	before := refusalsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var ops, syncs atomic.Int64
	for i, n := range nodes {
		c := n.C()
		wg.Add(2)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := c.Acquire(ctx, fmt.Sprintf("quiet-%d", i%2))
				if err != nil {
					continue
				}
				_ = l.Release(ctx)
				ops.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if c.Sync(ctx) == nil {
					syncs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal(ctx.Err())
	}
	after := refusalsOf(nodes)
	t.Logf("30 s of load: %d acquire+release, %d Syncs", ops.Load(), syncs.Load())
	for i, n := range nodes {
		if after[i] != before[i] {
			t.Errorf("%s counted refusals among healthy nodes: before %+v, after %+v", n.Name, before[i], after[i])
		}
	}
}

// refusalsOf returns each node's transport counters of refused input
// (InboundConns, a gauge, cleared).
func refusalsOf(nodes []*holdfasttest.Node) []transport.Stats {
	out := make([]transport.Stats, len(nodes))
	for i, n := range nodes {
		out[i] = n.C().TransportStats()
		out[i].InboundConns = 0
	}
	return out
}
