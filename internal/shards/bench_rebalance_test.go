package shards

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// fleet is several nodes' Managers and a leader's Balancer over one fake
// replica, each running in its own goroutines as on a real cluster (minus
// raft and the network): the owner and leader sides of a rebalance.
type fleet struct {
	*replica
	tb     testing.TB
	clk    *testkit.Clock
	nodes  []*fleetNode
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type fleetNode struct {
	id string
	m  *Manager[*Lease]
	s  *session.Session
}

func newFleet(tb testing.TB, shards int) *fleet {
	return &fleet{replica: newReplica(tb, shards), tb: tb, clk: &testkit.Clock{}}
}

// add starts a node with a session that stays valid for the whole run.
func (f *fleet) add(id string) *fleetNode {
	f.tb.Helper()
	n := &fleetNode{id: id}
	f.replica.session(id, ttl, false)
	n.s = session.New(context.Background(), id, ttl, f.clk, time.Hour)
	n.s.Extend(time.Now().Add(time.Hour), time.Hour)
	never := make(chan struct{})
	n.m = NewManager(Options[*Lease]{
		View:    f.view,
		Session: func() (*session.Session, <-chan struct{}) { return n.s, never },
		Commit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := f.apply(ctx, cmd)
			return err
		},
		Wrap:         func(l *Lease) *Lease { return l },
		DrainTimeout: 10 * time.Second,
		NodeID:       "n-" + id,
		SessionTTL:   ttl,
		Errors:       Errors{Lost: errLost, Revoked: errRevoked, Shutdown: errShutdown},
	})
	n.m.Start()
	f.nodes = append(f.nodes, n)
	return n
}

// lead runs a leader's Balancer until close.
func (f *fleet) lead() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	b := NewBalancer(BalancerOptions{View: f.view, Apply: f.apply, SessionTTL: ttl, ExpiryGrace: time.Second,
		RebalanceDelay: time.Millisecond, ReconcileInterval: 100 * time.Millisecond})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		b.Run(ctx)
	}()
}

func (f *fleet) close() {
	if f.cancel != nil {
		f.cancel()
	}
	f.wg.Wait()
	for _, n := range f.nodes {
		n.m.Close()
		n.s.End(errShutdown)
	}
}

// settled reports whether no shard is free or revoking, every node owns
// at least min shards, and every node's Manager holds exactly the shards
// the table shows it owning.
func (f *fleet) settled(min int) bool {
	owned, revoking, free := count(f.view())
	if free > 0 || len(revoking) > 0 {
		return false
	}
	for _, n := range f.nodes {
		if owned[n.id] < min || n.m.Count() != owned[n.id] {
			return false
		}
	}
	return true
}

// waitSettled polls settled with a deadline of a minute.
func (f *fleet) waitSettled(what string, min int) {
	f.tb.Helper()
	for deadline := time.Now().Add(time.Minute); !f.settled(min); {
		if time.Now().After(deadline) {
			f.tb.Fatalf("%s: not settled after a minute: %s", what, describe(f.view()))
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// BenchmarkRebalanceJoin measures a join at 100,000 shards: three nodes own
// every shard, a fourth joins, and the op ends when the table is balanced
// again and every Manager holds what the table shows (about 23,750 shards
// move: each handoff is a revoke, the owner's release and a grant). It
// reports the process's CPU time per join (cpu-s/op) beside the wall time,
// which a loaded machine stretches.
func BenchmarkRebalanceJoin(b *testing.B) {
	const shards = 100_000
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFleet(b, shards)
		for j := range 3 {
			f.add(fmt.Sprintf("s%d", j))
		}
		f.lead()
		f.waitSettled("formation", shards/3-shards/20)
		b.StartTimer()
		start := processCPU()
		f.add("s3")
		f.waitSettled("join", shards/4-shards/20)
		cpu += processCPU() - start
		b.StopTimer()
		f.close()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
