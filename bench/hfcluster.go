package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/transport/memnet"
)

// hfOptions describe a holdfast cluster to start. It follows holdfasttest's
// pattern (which needs a testing.TB): node i joins every node started
// before it.
type hfOptions struct {
	voters   int  // Config.Cluster.Voters and BootstrapExpect
	shards   int  // Config.Shards.Count
	inMemory bool // memnet instead of loopback TCP
	// base returns the Config every node starts from (default benchConfig).
	base func() coordinator.Config
	// labels, if set, starts each node under pprof labels node=<name>, so
	// that a CPU profile attributes its goroutines to it.
	labels bool
	// byLoad makes balanced wait for the leader's rounds by load to plan
	// no move (the owners report load) instead of the count bounds.
	byLoad bool
}

// hfCluster is a set of in-process holdfast nodes.
type hfCluster struct {
	opts  hfOptions
	loads []float64 // the shards' reported loads, for diagnostics (nil: none)
	dir   string
	net   *memnet.Network // nil on loopback TCP

	mu    sync.Mutex
	nodes []*hfNode
	seq   int
}

// hfNode is one node; c is nil once it has been killed.
type hfNode struct {
	name     string
	id       string
	eligible bool
	c        *coordinator.Coordinator
}

// benchConfig is DefaultLocalConfig with the 2 s session TTL of the lease
// workloads (the margin and grace scaled down with it; the grace stays
// above the 300 ms raft election timeout).
func benchConfig() coordinator.Config {
	c := coordinator.DefaultLocalConfig()
	c.Session.TTL = 2 * time.Second
	c.Session.LeaseMargin = 200 * time.Millisecond
	c.Session.ExpiryGrace = 400 * time.Millisecond
	return c
}

func newHFCluster(opts hfOptions) (*hfCluster, error) {
	dir, err := os.MkdirTemp("", "holdfast-bench-")
	if err != nil {
		return nil, err
	}
	h := &hfCluster{opts: opts, dir: dir}
	if opts.inMemory {
		h.net = memnet.New(1)
	}
	return h, nil
}

// startHF starts opts.voters voter-eligible nodes and waits until they
// form a cluster with a session on every node.
func startHF(opts hfOptions, timeout time.Duration) (*hfCluster, error) {
	h, err := newHFCluster(opts)
	if err != nil {
		return nil, err
	}
	for i := 0; i < opts.voters; i++ {
		if _, err := h.add(true); err != nil {
			h.close()
			return nil, err
		}
	}
	if err := h.waitReady(timeout); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// add starts one more node joining every running node. Voter-eligible
// nodes get a data dir (raft log and snapshots in bbolt, fsync on); the
// others are raft non-voters on in-memory stores.
func (h *hfCluster) add(eligible bool) (*hfNode, error) {
	h.mu.Lock()
	i := h.seq
	h.seq++
	join := h.joinAddrsLocked()
	h.mu.Unlock()

	base := h.opts.base
	if base == nil {
		base = benchConfig
	}
	cfg := base()
	name := fmt.Sprintf("node%d", i)
	cfg.NodeName = name
	cfg.Cluster.Voters = h.opts.voters
	cfg.Shards.Count = h.opts.shards
	cfg.Logger = slog.New(slog.DiscardHandler)
	if os.Getenv("HOLDFAST_BENCH_LOG_NODE") == name { // one node's logs, to read what it went through
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if lv := os.Getenv("HOLDFAST_BENCH_LOG_LEVEL"); lv != "" { // every node's logs from this level up (info, warn, error), each line with its node
		var level slog.Level
		if err := level.UnmarshalText([]byte(lv)); err != nil {
			level = slog.LevelWarn
		}
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("bench_node", name)
	}
	if eligible {
		cfg.DataDir = filepath.Join(h.dir, name)
		cfg.Cluster.BootstrapExpect = h.opts.voters
	} else {
		cfg.Cluster.BootstrapExpect = 0
	}
	if h.net != nil {
		host := fmt.Sprintf("n%d", i)
		cfg.RPCAddr = host + ":7000"
		cfg.GossipAddr = host + ":7001"
		cfg.Network = h.net.Node(host)
	}
	cfg.Join = join
	var c *coordinator.Coordinator
	var err error
	if h.opts.labels {
		pprof.Do(context.Background(), pprof.Labels("node", name), func(context.Context) {
			c, err = coordinator.New(cfg)
		})
	} else {
		c, err = coordinator.New(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	n := &hfNode{name: name, id: c.ID(), eligible: eligible, c: c}
	h.mu.Lock()
	h.nodes = append(h.nodes, n)
	h.mu.Unlock()
	return n, nil
}

// joinAddrsLocked lists the gossip addresses of the running nodes (at most
// 8 of the first ones: any one of them is enough to join).
func (h *hfCluster) joinAddrsLocked() []string {
	var out []string
	for _, n := range h.nodes {
		if n.c == nil || len(out) >= 8 {
			continue
		}
		addr := n.c.GossipAddr()
		if h.net != nil {
			ip, err := h.net.IPAddr(addr)
			if err != nil {
				continue
			}
			addr = ip
		}
		out = append(out, addr)
	}
	return out
}

// running returns the nodes that are up.
func (h *hfCluster) running() []*hfNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hfNode
	for _, n := range h.nodes {
		if n.c != nil {
			out = append(out, n)
		}
	}
	return out
}

// kill closes n at once, as a crash would look to the others.
func (h *hfCluster) kill(n *hfNode) {
	h.mu.Lock()
	c := n.c
	n.c = nil
	h.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// close closes every node (in parallel), the network and the data dirs.
func (h *hfCluster) close() {
	var wg sync.WaitGroup
	for _, n := range h.running() {
		wg.Go(func() { h.kill(n) })
	}
	wg.Wait()
	if h.net != nil {
		h.net.Close()
	}
	os.RemoveAll(h.dir)
}

var errNotYet = errors.New("not yet")

// leader returns the running node that leads raft.
func (h *hfCluster) leader() (*hfNode, error) {
	var leader *hfNode
	for _, n := range h.running() {
		if n.c.RaftState() == coordinator.StateLeader {
			if leader != nil {
				return nil, fmt.Errorf("%w: two leaders", errNotYet)
			}
			leader = n
		}
	}
	if leader == nil {
		return nil, fmt.Errorf("%w: no leader", errNotYet)
	}
	return leader, nil
}

// followers returns the running nodes that do not lead raft.
func (h *hfCluster) followers() []*hfNode {
	var out []*hfNode
	for _, n := range h.running() {
		if n.c.RaftState() != coordinator.StateLeader {
			out = append(out, n)
		}
	}
	return out
}

// ready reports nil once every running node is in the same cluster, sees
// every other one alive, knows the leader and holds a live session.
func (h *hfCluster) ready() error {
	running := h.running()
	if len(running) == 0 {
		return fmt.Errorf("%w: no node", errNotYet)
	}
	l, err := h.leader()
	if err != nil {
		return err
	}
	id := running[0].c.ClusterID()
	for _, n := range running {
		if err := n.c.Ready(); err != nil {
			return fmt.Errorf("%w: %s: %v", errNotYet, n.name, err)
		}
		if n.c.ClusterID() != id {
			return fmt.Errorf("%w: %s in another cluster", errNotYet, n.name)
		}
		if info, ok := n.c.RaftLeader(); !ok || info.ID != l.c.ID() {
			return fmt.Errorf("%w: %s does not name the leader", errNotYet, n.name)
		}
	}
	return h.allAlive(running)
}

// allAlive checks that every node sees every other one alive. With many
// nodes it checks a sample of observers (the first, the last, the leader's
// view) to keep the poll cheap.
func (h *hfCluster) allAlive(running []*hfNode) error {
	observers := running
	if len(running) > 9 {
		observers = []*hfNode{running[0], running[len(running)/2], running[len(running)-1]}
	}
	for _, o := range observers {
		alive := map[string]bool{}
		for _, m := range o.c.Members() {
			if m.State == coordinator.MemberAlive {
				alive[m.Name] = true
			}
		}
		for _, n := range running {
			if !alive[n.name] {
				return fmt.Errorf("%w: %s does not see %s", errNotYet, o.name, n.name)
			}
		}
	}
	return nil
}

func (h *hfCluster) waitReady(timeout time.Duration) error {
	next := time.Now().Add(10 * time.Second)
	return poll(timeout, func() error {
		err := h.ready()
		if err != nil && time.Now().After(next) {
			log.Printf("forming: still waiting: %v (%s)", err, h.readiness())
			next = time.Now().Add(10 * time.Second)
		}
		return err
	})
}

// readiness counts the running nodes by what Ready says of them.
func (h *hfCluster) readiness() string {
	count := map[string]int{}
	for _, n := range h.running() {
		reason := "ready"
		if err := n.c.Ready(); err != nil {
			reason = err.Error()
			if i := strings.Index(reason, " ("); i > 0 {
				reason = reason[:i]
			}
		}
		count[reason]++
	}
	var out []string
	for r, c := range count {
		out = append(out, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// poll calls cond every few milliseconds until it returns nil or timeout
// passes.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	delay := 2 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// drainNode keeps n from receiving shards (it owns none yet), so that a
// helper node's arrival and crash do not move shards during a lease
// measurement.
func drainNode(n *hfNode, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.c.Drain(ctx)
}
