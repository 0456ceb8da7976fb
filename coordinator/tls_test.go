package coordinator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// tlsRefusals sums the TLS refusal counters of the running nodes (except
// the ones in skip).
func tlsRefusals(cl *holdfasttest.Cluster, skip ...*holdfasttest.Node) transport.Stats {
	var sum transport.Stats
	for _, n := range without(cl.Running(), skip...) {
		st := n.C().TransportStats()
		sum.TLSHandshakeFailures += st.TLSHandshakeFailures
		sum.PlaintextRefused += st.PlaintextRefused
		sum.WrongPeerName += st.WrongPeerName
		sum.PlaintextFallbacks += st.PlaintextFallbacks
	}
	return sum
}

// acquireOnce takes and releases a lease from node n (a follower forwards
// it to the leader over RPC) and checks that every node of the cluster
// (the running nodes but outsiders) sees the holder.
func acquireOnce(t *testing.T, cl *holdfasttest.Cluster, n *holdfasttest.Node, name string, outsiders ...*holdfasttest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := n.C().Acquire(ctx, name)
	if err != nil {
		t.Fatalf("Acquire on %s: %v", n.Name, err)
	}
	if err := l.Checkpoint(); err != nil {
		t.Fatalf("fresh lease fails its checkpoint: %v", err)
	}
	for _, o := range without(cl.Running(), outsiders...) {
		cl.WaitFor(o.Name+" sees the holder", formTimeout, func() error {
			if h, ok := o.C().Holder(name); !ok || h.Token != l.Token() || h.Node.Name != n.Name {
				return fmt.Errorf("%w: holder %+v", holdfasttest.ErrNotYet, h)
			}
			return nil
		})
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// without returns nodes but the ones in skip.
func without(nodes []*holdfasttest.Node, skip ...*holdfasttest.Node) []*holdfasttest.Node {
	var out []*holdfasttest.Node
	for _, n := range nodes {
		if !slices.Contains(skip, n) {
			out = append(out, n)
		}
	}
	return out
}

// follower returns a running node that is not the leader.
func follower(cl *holdfasttest.Cluster, leader *holdfasttest.Node, outsiders ...*holdfasttest.Node) *holdfasttest.Node {
	for _, n := range without(cl.Running(), outsiders...) {
		if n != leader {
			return n
		}
	}
	return nil
}

func TestTLSClusterFormsAndLeases(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true})
	leader := cl.WaitFormed(formTimeout)
	if v := leader.C().Voters(); len(v) != 3 {
		t.Fatalf("voters %v, want 3", v)
	}
	acquireOnce(t, cl, follower(cl, leader), "tls-lease")
	if st := tlsRefusals(cl); st.TLSHandshakeFailures+st.WrongPeerName+st.PlaintextRefused+st.PlaintextFallbacks != 0 {
		t.Fatalf("refusals among nodes with good certificates: %+v", st)
	}
}

// dialTLS completes a TLS handshake with addr presenting cert and sends
// preamble; it returns the connection.
func dialTLS(t *testing.T, addr string, cert tls.Certificate, roots *x509.CertPool, preamble []byte) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS13,
		InsecureSkipVerify: true, // the server's name is not what this test checks
	})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	if _, err := c.Write(preamble); err != nil {
		t.Fatalf("write: %v", err)
	}
	return c
}

// TestTLSMigration runs a cluster whose nodes have TLS without requiring
// it, plus a plaintext node: the plaintext node joins and catches up.
func TestTLSMigration(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true,
		Configure: func(i int, c *coordinator.Config) {
			if i == 3 {
				c.TLS = nil
			} else {
				c.TLS.RequireTLS = false
			}
		}})
	cl.WaitFormed(formTimeout)
	plain := cl.Add()
	cl.WaitFormed(formTimeout)
	cl.WaitFor("all caught up", formTimeout, cl.CaughtUp)
	acquireOnce(t, cl, plain, "from-plaintext")
	if st := tlsRefusals(cl, plain); st.PlaintextFallbacks == 0 || st.WrongPeerName+st.PlaintextRefused != 0 {
		t.Fatalf("cluster stats %+v, want fallbacks and no refusals", st)
	}
}

// tlsSoak is how long TestHealthyTLSClusterCountsNoRefusals loads its
// cluster: the whole load ran on both cores of a CI machine for its 30 s
// (about a twentieth of the suite's CPU), so the default run loads it for
// 5 s and a longer soak is asked for.
var tlsSoak = flag.Duration("tls.soak", 5*time.Second, "TestHealthyTLSClusterCountsNoRefusals: how long to load the cluster (30s or more for a soak)")

// TestHealthyTLSClusterCountsNoRefusals: a healthy three-node TLS cluster
// on loopback under load (every node acquiring and releasing leases and
// calling Sync, so keepalives, forwards and confirmation rounds run all the
// time) for -tls.soak counts no refused connection or frame on any node: a
// refusal counter (holdfast_transport_refused_total, and its alert) must
// mean a stranger or a misconfiguration, never the cluster's own traffic.
func TestHealthyTLSClusterCountsNoRefusals(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true})
	cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	nodes := cl.Running()
	before := refusalsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), *tlsSoak)
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
	t.Logf("%v of load: %d acquire+release, %d Syncs", *tlsSoak, ops.Load(), syncs.Load())
	if ops.Load() == 0 || syncs.Load() == 0 {
		t.Errorf("the load never ran: %d acquire+release, %d Syncs", ops.Load(), syncs.Load())
	}
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
