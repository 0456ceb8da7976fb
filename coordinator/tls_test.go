package coordinator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/certs"
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

// pemFile writes b to a new file in dir and returns its path.
func pemFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serverOnlyCert returns a CA and a certificate for name it signed that
// allows server auth only.
func serverOnlyCert(t *testing.T, name string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "server-only CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	return enc("CERTIFICATE", caDER), enc("CERTIFICATE", leafDER), enc("PRIVATE KEY", keyDER)
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	ca, err := certs.NewCA("cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := ca.WriteFiles(dir, "n")
	if err != nil {
		t.Fatal(err)
	}
	nCert, nKey, _ := ca.NodeCert("n")
	_, strangerKey, _ := ca.NodeCert("n")
	foreignCert, foreignKey, _ := other.NodeCert("n")
	wrongCert, wrongKey, _ := ca.NodeCert("m")
	soCA, soCert, soKey := serverOnlyCert(t, "n")
	garbage := pemFile(t, dir, "garbage.pem", []byte("not PEM at all"))
	missing := filepath.Join(dir, "missing.pem")
	pemCfg := func() *coordinator.TLSConfig {
		return &coordinator.TLSConfig{CAPEM: ca.CertPEM(), CertPEM: nCert, KeyPEM: nKey, RequireTLS: true}
	}
	fileCfg := func() *coordinator.TLSConfig {
		return &coordinator.TLSConfig{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, RequireTLS: true}
	}
	for _, tc := range []struct {
		name, field, detail string // field "" means valid
		tls                 *coordinator.TLSConfig
	}{
		{"files", "", "", fileCfg()},
		{"PEM", "", "", pemCfg()},
		{"PEM wins over files", "", "", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CAFile, c.CertFile, c.KeyFile = missing, garbage, missing
			return c
		}()},
		{"CA file unreadable", "TLS.CAFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.CAFile = missing; return c }()},
		{"cert file unreadable", "TLS.CertFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.CertFile = missing; return c }()},
		{"key file unreadable", "TLS.KeyFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.KeyFile = missing; return c }()},
		{"CA file not PEM", "TLS.CAFile", "no PEM certificate", func() *coordinator.TLSConfig { c := fileCfg(); c.CAFile = garbage; return c }()},
		{"cert file not PEM", "TLS.CertFile", "no PEM certificate", func() *coordinator.TLSConfig { c := fileCfg(); c.CertFile = garbage; return c }()},
		{"key file not PEM", "TLS.KeyFile", "", func() *coordinator.TLSConfig { c := fileCfg(); c.KeyFile = garbage; return c }()},
		{"CA PEM bad", "TLS.CAPEM", "no PEM certificate", func() *coordinator.TLSConfig { c := pemCfg(); c.CAPEM = []byte("x"); return c }()},
		{"cert PEM bad", "TLS.CertPEM", "", func() *coordinator.TLSConfig { c := pemCfg(); c.CertPEM = nKey; return c }()},
		{"key of another certificate", "TLS.KeyPEM", "private key does not match", func() *coordinator.TLSConfig { c := pemCfg(); c.KeyPEM = strangerKey; return c }()},
		{"certificate of another CA", "TLS.CertPEM", "mismatched CA", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CertPEM, c.KeyPEM = foreignCert, foreignKey
			return c
		}()},
		{"certificate naming another node", "TLS.CertPEM", "must name the node", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CertPEM, c.KeyPEM = wrongCert, wrongKey
			return c
		}()},
		{"certificate for server auth only", "TLS.CertPEM", "server and client auth", &coordinator.TLSConfig{CAPEM: soCA, CertPEM: soCert, KeyPEM: soKey}},
		{"RequireTLS without certificates", "TLS.RequireTLS", "no certificate", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), RequireTLS: true}},
		{"no CA", "TLS.CAFile", "must be set", &coordinator.TLSConfig{CertPEM: nCert, KeyPEM: nKey}},
		{"no certificate", "TLS.CertFile", "must be set", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), KeyPEM: nKey}},
		{"no key", "TLS.KeyFile", "must be set", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), CertPEM: nCert}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := coordinator.DefaultLocalConfig()
			cfg.NodeName, cfg.DataDir, cfg.TLS = "n", t.TempDir(), tc.tls
			c, err := coordinator.New(cfg)
			if c != nil {
				_ = c.Close()
			}
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.field == "":
			case !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") ||
				!strings.Contains(err.Error(), tc.detail):
				t.Fatalf("New = %v; want an ErrInvalidConfig naming %s (%q)", err, tc.field, tc.detail)
			}
		})
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

// replaceFile writes b to path by renaming a temporary file over it.
func replaceFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serialOf returns the serial of the first certificate in certPEM.
func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// TestTLSCertificateReload replaces node0's certificate files with a new
// certificate of the same CA: new handshakes present it without a restart,
// and the node keeps serving leases. Then it writes a broken certificate:
// the reload fails, is counted, and the node keeps the last good one.
func TestTLSCertificateReload(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, TLS: true, Configure: func(i int, c *coordinator.Config) {
		c.TLS.ReloadInterval = 50 * time.Millisecond
		if i == 0 {
			c.Registerer = reg
		}
	}})
	cl.WaitFormed(formTimeout)
	n := cl.Node(0)
	probePEM, probeKey, err := cl.CA.NodeCert("probe")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := tls.X509KeyPair(probePEM, probeKey)
	if err != nil {
		t.Fatal(err)
	}
	presented := func() string {
		c := dialTLS(t, n.C().RPCAddr(), probe, cl.CA.Pool(), nil)
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	old := presented()

	certPEM, keyPEM, err := cl.CA.NodeCert(n.Name)
	if err != nil {
		t.Fatal(err)
	}
	want := serialOf(t, certPEM)
	replaceFile(t, n.Config.TLS.KeyFile, keyPEM)
	replaceFile(t, n.Config.TLS.CertFile, certPEM)
	cl.WaitFor("the new certificate presented", formTimeout, func() error {
		if got := presented(); got != want {
			return fmt.Errorf("%w: serial %s (old %s), want %s", holdfasttest.ErrNotYet, got, old, want)
		}
		return nil
	})
	if v := metricValue(t, reg, "holdfast_tls_reloads_total", map[string]string{"result": "ok"}); v < 1 {
		t.Errorf("reloads ok = %v, want at least 1", v)
	}
	acquireOnce(t, cl, n, "after-reload")

	replaceFile(t, n.Config.TLS.CertFile, []byte("not a certificate\n"))
	cl.WaitFor("the failed reload counted", formTimeout, func() error {
		if metricValue(t, reg, "holdfast_tls_reloads_total", map[string]string{"result": "error"}) < 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if got := presented(); got != want {
		t.Errorf("after a broken certificate file, the node presents serial %s, want the last good one %s", got, want)
	}
}
