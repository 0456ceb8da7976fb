package coordinator_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestLateSessionCreateTakesNoShards: a node whose requests reach the
// leader later than RPCTimeout (the leader counts a forwarded command's
// budget from its arrival: it commits the create after the caller gave up)
// must not leave behind a session that owns shards. The node is a
// non-voter (its slow raft answers matter to nobody); its keepalives fail,
// its belief lapses, and each create it then sends commits after the
// caller timed out. No
// session of the node that the node never believed in may own a shard, and
// such sessions must be gone soon after the answers are on time again.
func TestLateSessionCreateTakesNoShards(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, InMemory: true, NoDataDir: []int{3},
		Configure: func(_ int, c *coordinator.Config) { c.Shards.Count = 48 }})
	leader := cl.WaitFormed(formTimeout)
	n := cl.Node(3)
	cl.WaitFor("node3 has a session", formTimeout, func() error {
		if n.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	id := n.C().ID()
	rpc := n.C().Config().RPCTimeout
	ttl := n.C().Config().Session.TTL

	// Sample, every few milliseconds, which sessions node3 believed in and
	// which sessions of node3 own shards on the leader.
	var mu sync.Mutex
	believed := map[string]bool{}
	owners := map[string]int{} // session → most shards seen owned at once
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			sample(leader.C(), n.C(), id, &mu, believed, owners)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-sampled
	}()

	first := n.C().SessionID()
	late := rpc + rpc/4
	// Delay node3's calls to every voter, not only to the leader of the
	// moment: a leader change on a loaded host would otherwise take its
	// creates at once and none would ever be late.
	setDelay := func(d time.Duration) {
		for _, v := range cl.Running() {
			if v != n {
				cl.Net.SetDelay(n.C().RPCAddr(), v.C().RPCAddr(), d, d)
			}
		}
	}
	setDelay(late)
	heal := func() { setDelay(0) }
	// Wait until at least one create sent while the answers were late
	// committed: a session of node3 the node never believed in.
	cl.WaitFor("a create committed after its caller gave up", formTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range leader.C().SessionsOfNode(id) {
			if s != first && !believed[s] {
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	heal()
	cl.WaitFor("node3 back in a session", formTimeout, func() error {
		if s := n.C().SessionID(); s == "" || s == first {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	// Any session nobody keeps alive is expired one TTL after it appeared
	// at the latest; watch for TTL + JoinStabilization + grace beyond that
	// (a late session gets shards, if at all, JoinStabilization after it
	// appears) and until the leader shows only the node's own session.
	deadline := time.Now().Add(2*ttl + n.C().Config().Shards.JoinStabilization + n.C().Config().Session.ExpiryGrace)
	cl.WaitFor("only node3's own session left", formTimeout, func() error {
		cur := n.C().SessionID()
		if sessions := leader.C().SessionsOfNode(id); time.Now().Before(deadline) || len(sessions) != 1 || sessions[0] != cur {
			return fmt.Errorf("%w: sessions of node3 %v, its own %s", holdfasttest.ErrNotYet, sessions, cur)
		}
		return nil
	})
	close(stop)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	var orphans []string
	for s, shards := range owners {
		if !believed[s] {
			orphans = append(orphans, fmt.Sprintf("%s (%d shards)", s, shards))
		}
	}
	slices.Sort(orphans)
	if len(orphans) > 0 {
		t.Fatalf("sessions of node3 the node never believed in owned shards: %v", orphans)
	}
	t.Logf("sessions of node3 that owned shards: %d, all believed by the node", len(owners))
	// Its graceful shutdown hands its shards off without waiting on any
	// session it does not keep alive.
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Stop(ctx, n.Index); err != nil {
		t.Fatalf("graceful shutdown of node3: %v", err)
	}
}

// sample records n's current session in believed and, for every session of
// the node with raft ID id that owns shards on leader, the most shards it
// was seen owning.
func sample(leader, n *coordinator.Coordinator, id string, mu *sync.Mutex, believed map[string]bool, owners map[string]int) {
	mu.Lock()
	defer mu.Unlock()
	if s := n.SessionID(); s != "" {
		believed[s] = true
	}
	t := leader.Table()
	count := map[string]int{}
	for s := 0; s < t.Len(); s++ {
		if h, ok := t.Owner(coordinator.ShardID(s)); ok && h.Node.ID == id {
			count[h.Session]++
		}
	}
	for s, c := range count {
		owners[s] = max(owners[s], c)
	}
}

// shardLoad is the load the tests' shards report: eight hot shards.
func shardLoad(s coordinator.ShardID) float64 {
	if s < 8 {
		return 8
	}
	return 1
}

// TestShardsBalanceByLoad: three nodes on loopback TCP whose shard leases
// report uneven loads (ShardLease.ReportLoad, carried on keepalives) end
// with every node's load within 10% of its target, and the leader's
// Placement shows the round by load with each node's load and target.
func TestShardsBalanceByLoad(t *testing.T) {
	t.Parallel()
	const shards = 32
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Shards.Handler = coordinator.HandlerFuncs{ServeFunc: func(_ context.Context, l *coordinator.ShardLease) {
			l.ReportLoad(shardLoad(l.Shard()))
		}}
	}})
	cl.WaitFormed(formTimeout)
	total := 0.0
	for s := range shards {
		total += shardLoad(coordinator.ShardID(s))
	}
	cl.WaitFor("shards balanced by load", formTimeout, func() error {
		leader, err := cl.Leader()
		if err != nil {
			return err
		}
		p, ok := leader.C().Placement()
		if !ok || !p.ByLoad || len(p.Nodes) != 3 || len(p.Moves) != 0 {
			return fmt.Errorf("%w: placement %+v", holdfasttest.ErrNotYet, p)
		}
		tab := leader.C().Table()
		load := map[string]float64{}
		for s := range shards {
			sh, ok := tab.Shard(coordinator.ShardID(s))
			if !ok || sh.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d not owned", holdfasttest.ErrNotYet, s)
			}
			load[sh.Owner.Node.Name] += shardLoad(coordinator.ShardID(s))
		}
		for _, n := range p.Nodes {
			if n.Target < total/3-1e-6 || n.Target > total/3+1e-6 {
				return fmt.Errorf("node %s target %v, want %v", n.Node, n.Target, total/3)
			}
			if r := load[n.Node] / n.Target; r < 0.9 || r > 1.1 {
				return fmt.Errorf("%w: node %s carries %v, target %v", holdfasttest.ErrNotYet, n.Node, load[n.Node], n.Target)
			}
		}
		return nil
	})
}

// TestNoSessionLostInLargeRebalance runs three nodes with 100,000 shards
// on the in-memory network with the whole process held to one core
// (GOMAXPROCS 1), then has a fourth node join, which moves about a
// quarter of the shards. Every node must keep the session it had: no
// session expires (holdfast_session_expiries_total stays 0 on every node
// and no node's session ID changes) while every shard ends up owned and
// the table balanced. A cluster whose shard work starves its keepalives
// turns a rebalance into a cascade of expiries. It asserts counts, not
// times, and runs alone (no t.Parallel) because it changes GOMAXPROCS.
func TestNoSessionLostInLargeRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 shards: skipped with -short")
	}
	const shards = 100_000
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	regs := make([]*prometheus.Registry, 4)
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Registerer = regs[i]
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	before := nodeSessionIDs(cl)

	joined := cl.Add()
	cl.WaitFor("the fourth node in a session", formTimeout, func() error {
		if joined.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	counts := waitBalanced(t, cl, shards, formTimeout)
	t.Logf("balanced after the join: %v", counts)

	for name, id := range before {
		if now := nodeSessionIDs(cl)[name]; now != id {
			t.Errorf("%s: session %s replaced by %q during the rebalance", name, id, now)
		}
	}
	for i, reg := range regs {
		if v := metricValue(t, reg, "holdfast_session_expiries_total", nil); v != 0 {
			t.Errorf("node%d expired %v sessions as leader during the rebalance", i, v)
		}
	}
}

// nodeSessionIDs returns each running node's current session ID by name.
func nodeSessionIDs(cl *holdfasttest.Cluster) map[string]string {
	out := map[string]string{}
	for _, n := range cl.Running() {
		out[n.Name] = n.C().SessionID()
	}
	return out
}
