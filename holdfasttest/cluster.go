package holdfasttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/transport/memnet"
)

// Options describe a cluster to start.
type Options struct {
	// Nodes is how many nodes Start starts (default 3).
	Nodes int
	// Voters is Config.Cluster.Voters (default: 3, or 1 for a single node).
	Voters int
	// BootstrapExpect is Config.Cluster.BootstrapExpect (default: Voters).
	BootstrapExpect int
	// NoDataDir lists the indexes of nodes started without a data dir
	// (raft non-voters on in-memory stores).
	NoDataDir []int
	// InMemory runs the cluster on a memnet network instead of loopback.
	InMemory bool
	// Seed seeds the in-memory network (default 1).
	Seed int64
	// Configure, if set, adjusts each node's Config before it starts.
	Configure func(i int, c *coordinator.Config)
	// NoStart creates the nodes' configurations without starting them;
	// start them with Cluster.Start (in any order).
	NoStart bool
	// TLS turns on mutual TLS: Start makes a throwaway CA (Cluster.CA) and
	// gives every node, before Configure runs, a TLSConfig with RequireTLS
	// set and a certificate for its name written to files in a temporary
	// directory. A Configure that renames a node must replace its TLS too
	// (see NodeTLS).
	TLS bool
	// JoinFirst, if set, has each node join only the first JoinFirst other
	// nodes rather than every one: with hundreds of nodes a join to each
	// would be a full-state push-pull with each.
	JoinFirst int
}

// Cluster is a set of in-process holdfast nodes under test.
type Cluster struct {
	t   testing.TB      // waits and failures report to it (For)
	Net *memnet.Network // nil on loopback TCP
	CA  *certs.CA       // the nodes' CA with Options.TLS; nil without
	*nodes
}

// nodes is what every view of a Cluster (For) shares.
type nodes struct {
	opts   Options
	dir    string // data dirs and certificates; removed after Close
	closed atomic.Bool
	logMu  sync.Mutex

	mu    sync.Mutex
	all   []*Node
	ports portLocks // loopback ports reserved for the nodes; released by Close
}

// For returns the same cluster as seen by test t, a subtest of the test
// that started it: its waits (WaitFor, WaitFormed) and failures report to
// t, so that several subtests, also parallel ones, can share one formed
// cluster. The cluster still closes when the test that started it ends.
func (cl *Cluster) For(t testing.TB) *Cluster {
	return &Cluster{t: t, Net: cl.Net, CA: cl.CA, nodes: cl.nodes}
}

// Node is one member of a Cluster.
type Node struct {
	Index   int
	Name    string
	DataDir string // empty for a non-voter
	// Config is what the node starts with; Restart reuses it (with the
	// addresses it bound the first time).
	Config coordinator.Config

	mu sync.Mutex
	c  *coordinator.Coordinator
}

// C returns the running coordinator, or nil while the node is down.
func (n *Node) C() *coordinator.Coordinator {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.c
}

// Start starts a cluster as opts describe and registers its Close with
// t.Cleanup. Nodes join node 0 (and every node started before them).
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Voters == 0 {
		opts.Voters = 3
		if opts.Nodes == 1 {
			opts.Voters = 1
		}
	}
	if opts.BootstrapExpect == 0 {
		opts.BootstrapExpect = opts.Voters
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	cl := &Cluster{t: t, nodes: &nodes{opts: opts}}
	if opts.InMemory {
		cl.Net = memnet.New(opts.Seed)
	}
	if opts.TLS {
		ca, err := certs.NewCA("holdfasttest CA")
		if err != nil {
			t.Fatalf("holdfasttest: %v", err)
		}
		cl.CA = ca
	}
	// The temp dir first: cleanups run last-registered first, so the nodes
	// close before their data dirs are removed (a node whose dir vanished
	// while it ran would fail to write raft's term and vote).
	cl.dir = t.TempDir()
	t.Cleanup(cl.Close)
	for i := 0; i < opts.Nodes; i++ {
		n := cl.newNode()
		if !opts.NoStart {
			cl.Start(n.Index)
		}
	}
	return cl
}

// newNode creates the next node's configuration.
func (cl *Cluster) newNode() *Node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	i := len(cl.all)
	n := &Node{Index: i, Name: fmt.Sprintf("node%d", i)}
	eligible := true
	for _, j := range cl.opts.NoDataDir {
		if j == i {
			eligible = false
		}
	}
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = n.Name
	cfg.Cluster.Voters = cl.opts.Voters
	cfg.Cluster.BootstrapExpect = cl.opts.BootstrapExpect
	if eligible {
		n.DataDir = filepath.Join(cl.dir, n.Name)
		cfg.DataDir = n.DataDir
	} else {
		cfg.Cluster.BootstrapExpect = 0
	}
	if cl.Net != nil {
		host := fmt.Sprintf("n%d", i)
		cfg.RPCAddr = host + ":7000"
		cfg.GossipAddr = host + ":7001"
		cfg.Network = cl.Net.Node(host)
	} else {
		cl.reserveAddrs(&cfg)
	}
	cfg.Logger = newTestLogger(cl.t, &cl.closed, &cl.logMu).With("test_node", n.Name)
	if cl.CA != nil {
		dir := filepath.Join(cl.dir, "tls-"+n.Name)
		err := os.MkdirAll(dir, 0o700)
		var f certs.Files
		if err == nil {
			f, err = cl.CA.WriteFiles(dir, n.Name)
		}
		if err != nil {
			cl.t.Fatalf("holdfasttest: certificate for %s: %v", n.Name, err)
		}
		cfg.TLS = &coordinator.TLSConfig{CAFile: f.CAFile, CertFile: f.CertFile, KeyFile: f.KeyFile, RequireTLS: true}
	}
	if cl.opts.Configure != nil {
		cl.opts.Configure(i, &cfg)
	}
	n.Config = cfg
	n.Name = cfg.NodeName
	cl.all = append(cl.all, n)
	return n
}

// reserveAddrs gives a loopback node's RPC and gossip addresses ports of
// their own that stay reserved for restarts (portLocks); where none can be
// reserved the node binds port 0 and a restart reuses what it was given.
// cl.mu is held.
func (cl *Cluster) reserveAddrs(cfg *coordinator.Config) {
	for _, addr := range []*string{&cfg.RPCAddr, &cfg.GossipAddr} {
		if *addr != "127.0.0.1:0" {
			continue
		}
		p, ok, err := cl.ports.reserve()
		if err != nil {
			cl.t.Fatalf("holdfasttest: reserving a port: %v", err)
		}
		if ok {
			*addr = fmt.Sprintf("127.0.0.1:%d", p)
		}
	}
}

// NodeTLS returns a TLSConfig (PEM, RequireTLS set) with a certificate for
// nodeName signed by ca, failing the test on error. ca may be another CA
// than Cluster.CA, to start a node the cluster must refuse.
func NodeTLS(t testing.TB, ca *certs.CA, nodeName string) *coordinator.TLSConfig {
	t.Helper()
	certPEM, keyPEM, err := ca.NodeCert(nodeName)
	if err != nil {
		t.Fatalf("holdfasttest: certificate for %s: %v", nodeName, err)
	}
	return &coordinator.TLSConfig{CAPEM: ca.CertPEM(), CertPEM: certPEM, KeyPEM: keyPEM, RequireTLS: true}
}

// Add creates and starts one more node that joins the cluster.
func (cl *Cluster) Add() *Node {
	n := cl.newNode()
	cl.Start(n.Index)
	return n
}

// AddNoStart creates one more node's configuration without starting it.
func (cl *Cluster) AddNoStart() *Node { return cl.newNode() }

// Node returns node i.
func (cl *Cluster) Node(i int) *Node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.all[i]
}

// Nodes returns every node, running or not.
func (cl *Cluster) Nodes() []*Node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return append([]*Node(nil), cl.all...)
}

// Running returns the nodes that are up.
func (cl *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range cl.Nodes() {
		if n.C() != nil {
			out = append(out, n)
		}
	}
	return out
}

// joinAddrs lists the gossip addresses of every other node that has run.
func (cl *Cluster) joinAddrs(self *Node) []string {
	var out []string
	for _, n := range cl.Nodes() {
		if n == self {
			continue
		}
		addr := n.Config.GossipAddr
		if c := n.C(); c != nil {
			addr = c.GossipAddr()
		} else if cl.Net == nil && isPortZero(addr) {
			continue // never started: no address yet
		}
		if cl.Net != nil {
			ip, err := cl.Net.IPAddr(addr)
			if err != nil {
				continue
			}
			addr = ip
		}
		out = append(out, addr)
		if cl.opts.JoinFirst > 0 && len(out) == cl.opts.JoinFirst {
			break
		}
	}
	return out
}

func isPortZero(addr string) bool {
	return len(addr) >= 2 && addr[len(addr)-2:] == ":0"
}

// Start starts (or restarts) node i with its Config; it fails the test if
// New fails. On loopback, each node's ports are reserved for the cluster's
// life (on Linux: below the kernel's ephemeral range, locked against every
// other cluster), so a restart finds its addresses free.
func (cl *Cluster) Start(i int) *coordinator.Coordinator {
	cl.t.Helper()
	c, err := cl.TryStart(i)
	if err != nil {
		cl.t.Fatalf("starting %s: %v%s", cl.Node(i).Name, err, cl.inUse(i, err))
	}
	return c
}

// TryStart is Start that returns New's error instead of failing the test.
func (cl *Cluster) TryStart(i int) (*coordinator.Coordinator, error) {
	n := cl.Node(i)
	if n.C() != nil {
		return nil, fmt.Errorf("%s is already running", n.Name)
	}
	cfg := n.Config
	cfg.Join = cl.joinAddrs(n)
	c, err := coordinator.New(cfg)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.c = c
	if cl.Net == nil {
		n.Config.RPCAddr = c.RPCAddr()
		n.Config.GossipAddr = c.GossipAddr()
	}
	n.mu.Unlock()
	return c, nil
}

// Kill closes node i at once, as a crash would.
func (cl *Cluster) Kill(i int) {
	n := cl.Node(i)
	n.mu.Lock()
	c := n.c
	n.c = nil
	n.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil {
			cl.t.Logf("closing %s: %v", n.Name, err)
		}
	}
}

// Stop shuts node i down gracefully and returns Shutdown's error.
func (cl *Cluster) Stop(ctx context.Context, i int) error {
	n := cl.Node(i)
	n.mu.Lock()
	c := n.c
	n.c = nil
	n.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Shutdown(ctx)
}

// Restart kills node i (if running) and starts it again with the same data
// dir and addresses.
func (cl *Cluster) Restart(i int) *coordinator.Coordinator {
	cl.Kill(i)
	return cl.Start(i)
}

// Wipe deletes node i's data dir; the node must be down.
func (cl *Cluster) Wipe(i int) {
	n := cl.Node(i)
	if n.C() != nil {
		cl.t.Fatalf("wipe %s: node is running", n.Name)
	}
	if n.DataDir != "" {
		if err := os.RemoveAll(n.DataDir); err != nil {
			cl.t.Fatal(err)
		}
	}
}

// Close closes every node and the network; it is registered with
// t.Cleanup by Start and safe to call again. On the in-memory network the
// network closes first: raft's Shutdown waits for its replication calls,
// and a call to a peer that a fault cut off would otherwise wait out the
// transport's timeout (about 15 s per test); with every connection closed
// it fails at once. To the nodes it is the same crash.
func (cl *Cluster) Close() {
	if cl.Net != nil {
		cl.Net.Close()
	}
	var wg sync.WaitGroup
	for _, n := range cl.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.Kill(n.Index)
		}()
	}
	wg.Wait()
	cl.mu.Lock()
	cl.ports.release()
	cl.mu.Unlock()
	cl.logMu.Lock()
	cl.closed.Store(true)
	cl.logMu.Unlock()
}
