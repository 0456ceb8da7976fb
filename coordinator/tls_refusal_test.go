// TLS refusals: a node of another CA, a certificate naming another node,
// and a plaintext node are refused by a TLS cluster.

package coordinator_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// TestTLSOtherCANodeRefused starts a node whose certificate another CA
// signed: it is refused on every connection and never enters the raft
// configuration, neither when gossip is in clear text nor when it holds
// the cluster's gossip key (so gossip admits it as a member).
func TestTLSOtherCANodeRefused(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("gossipKeys=%v", keyed), func(t *testing.T) { testOtherCANode(t, keyed) })
	}
}

func testOtherCANode(t *testing.T, keyed bool) {
	other, err := certs.NewCA("intruder CA")
	if err != nil {
		t.Fatal(err)
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true,
		Configure: func(i int, c *coordinator.Config) {
			if keyed {
				c.Gossip.Keys = [][]byte{gossipKey(7)}
			}
			if i == 3 {
				c.TLS = holdfasttest.NodeTLS(t, other, c.NodeName)
			}
		}})
	leader := cl.WaitFormed(formTimeout)
	intruder := cl.Add()
	ic := intruder.C()
	// inConfig fails the test as soon as any node's raft configuration
	// holds the intruder.
	inConfig := func() {
		for _, n := range without(cl.Running(), intruder) {
			for _, m := range n.C().Members() {
				if m.Name == intruder.Name && m.Suffrage != coordinator.SuffrageNone {
					t.Fatalf("%s has the intruder in its raft configuration as %s", n.Name, m.Suffrage)
				}
			}
		}
	}
	// Gossip is not guarded by TLS, so the leader sees the intruder, tries
	// to verify it and refuses it; the intruder refuses the cluster's
	// certificate in turn.
	cl.WaitFor("the intruder is a gossip member, refused on both sides", formTimeout, func() error {
		inConfig()
		if memberNamed(leader.C(), intruder.Name).Name == "" {
			return fmt.Errorf("%w: the leader's gossip does not know the intruder", holdfasttest.ErrNotYet)
		}
		ours, theirs := tlsRefusals(cl, intruder), ic.TransportStats()
		if ours.TLSHandshakeFailures < 3 || theirs.TLSHandshakeFailures < 3 {
			return fmt.Errorf("%w: cluster counted %d handshake failures, intruder %d", holdfasttest.ErrNotYet,
				ours.TLSHandshakeFailures, theirs.TLSHandshakeFailures)
		}
		return nil
	})
	acquireOnce(t, cl, follower(cl, leader, intruder), "still-works", intruder)
	inConfig()
	if id, idx := ic.ClusterID(), ic.AppliedIndex(); id != "" || idx != 0 {
		t.Fatalf("intruder learned cluster %q, applied index %d", id, idx)
	}
	if l, ok := ic.RaftLeader(); ok {
		t.Fatalf("intruder knows leader %+v", l)
	}
}

// expectClosed waits for the peer to close c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(formTimeout))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the node kept the connection open")
	}
}

func TestTLSCertificateNamingAnotherNodeRefused(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true,
		Configure: func(i int, c *coordinator.Config) { c.Cluster.DeadServerStabilization = 5 * time.Minute }})
	leader := cl.WaitFormed(formTimeout)

	// A node cannot be started with a certificate naming another node.
	cfg := cl.Node(0).Config
	cfg.NodeName, cfg.DataDir, cfg.RPCAddr, cfg.GossipAddr = "node9", t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	cfg.TLS = holdfasttest.NodeTLS(t, cl.CA, "node1")
	if c, err := coordinator.New(cfg); err == nil {
		_ = c.Close()
		t.Fatal("New accepted a certificate naming another node")
	} else if !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), "TLS.CertPEM") {
		t.Fatalf("New: %v, want ErrInvalidConfig naming TLS.CertPEM", err)
	}

	// Server side: a client holding a genuine certificate for "mallory"
	// that claims to be node1 is refused on RPC and on raft.
	certPEM, keyPEM, err := cl.CA.NodeCert("mallory")
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	target := leader.C()
	claim := append([]byte{0}, "node1"...)
	claim[0] = byte(len(claim) - 1)
	rpc := append(append([]byte{'P'}, claim...), 0, 0, 0, 1, 0x80)
	raftHdr := append(append(append([]byte{'R'}, claim...), byte(len(target.ID()))), target.ID()...)
	before := target.TransportStats().WrongPeerName
	for _, preamble := range [][]byte{rpc, raftHdr} {
		c := dialTLS(t, target.RPCAddr(), mallory, cl.CA.Pool(), preamble)
		expectClosed(t, c)
		_ = c.Close()
	}
	cl.WaitFor("wrong names counted", formTimeout, func() error {
		if got := target.TransportStats().WrongPeerName - before; got < 2 {
			return fmt.Errorf("%w: %d counted", holdfasttest.ErrNotYet, got)
		}
		return nil
	})

	// Client side: node2 dies and mallory, with a certificate the CA
	// signed, takes over its address. The leader, still trying to reach
	// node2 there, refuses a server whose certificate does not name node2.
	victim := follower(cl, leader)
	addr := victim.C().RPCAddr()
	cl.Kill(victim.Index)
	wrongBefore := tlsRefusals(cl).WrongPeerName
	imp, err := transport.New(transport.Config{
		BindAddr: addr,
		Logger:   victim.Config.Logger.With("impostor", true),
		TLS:      &transport.TLS{NodeName: "mallory", Certificate: mallory, CAs: cl.CA.Pool(), Required: true},
	})
	if err != nil {
		t.Fatalf("impostor on %s: %v", addr, err)
	}
	defer imp.Close()
	cl.WaitFor("the cluster refuses the impostor", formTimeout, func() error {
		ours, theirs := tlsRefusals(cl), imp.Stats()
		if ours.WrongPeerName-wrongBefore < 1 || theirs.TLSHandshakeFailures < 1 {
			return fmt.Errorf("%w: cluster counted %d wrong names, impostor %d failed handshakes",
				holdfasttest.ErrNotYet, ours.WrongPeerName-wrongBefore, theirs.TLSHandshakeFailures)
		}
		return nil
	})
}

func TestTLSPlaintextNodeRefused(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true,
		Configure: func(i int, c *coordinator.Config) {
			if i == 3 {
				c.TLS = nil
			}
		}})
	leader := cl.WaitFormed(formTimeout)
	plain := cl.Add()
	// The leader's TLS connections to the plaintext node fail, and it does
	// not fall back to plaintext.
	cl.WaitFor("TLS to the plaintext node refused", formTimeout, func() error {
		if st := tlsRefusals(cl, plain); st.TLSHandshakeFailures < 2 || st.PlaintextFallbacks != 0 {
			return fmt.Errorf("%w: cluster stats %+v", holdfasttest.ErrNotYet, st)
		}
		return nil
	})
	// Plaintext raft and RPC to every node of the cluster are refused.
	for _, n := range cl.Running() {
		if n == plain {
			continue
		}
		before := n.C().TransportStats().PlaintextRefused
		for _, preamble := range [][]byte{
			{'P', 0, 0, 0, 1, 0x80},
			append([]byte{'R', byte(len(n.C().ID()))}, n.C().ID()...),
		} {
			c, err := net.DialTimeout("tcp", n.C().RPCAddr(), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(preamble); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
			_ = c.Close()
		}
		cl.WaitFor(n.Name+" counts plaintext refusals", formTimeout, func() error {
			if got := n.C().TransportStats().PlaintextRefused - before; got < 2 {
				return fmt.Errorf("%w: %d counted", holdfasttest.ErrNotYet, got)
			}
			return nil
		})
	}
	pc := plain.C()
	if id, idx := pc.ClusterID(), pc.AppliedIndex(); id != "" || idx != 0 {
		t.Fatalf("plaintext node learned cluster %q, applied index %d", id, idx)
	}
	acquireOnce(t, cl, follower(cl, leader, plain), "still-works", plain)
}
