package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/coordinator"
)

// node is one member of the demo cluster with everything around it: the
// pausable network it talks through, its handle on the shared SQLite file,
// its shard workers, the freezer that can stop them, and its auditor.
type node struct {
	name string
	c    *coordinator.Coordinator
	net  *pausableNet
	led  *ledger
	ws   *workers
	frz  *freezer
	aud  *auditor
}

// config returns node i's holdfast configuration: the local timing profile
// (fast raft and gossip on loopback), with the lease margin and expiry
// grace scaled to the TTL as the defaults are (TTL/10 and TTL/5, but at
// least the raft election timeout, or New refuses it).
func config(o options, i int, dir string) coordinator.Config {
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = fmt.Sprintf("node%d", i+1)
	cfg.DataDir = filepath.Join(dir, cfg.NodeName)
	cfg.Cluster.Voters = 3
	if o.nodes < 3 {
		cfg.Cluster.Voters = 1
	}
	cfg.Cluster.BootstrapExpect = cfg.Cluster.Voters
	if i >= cfg.Cluster.Voters {
		cfg.Cluster.BootstrapExpect = 0 // the first Voters nodes form the cluster; the rest join it
	}
	cfg.Shards.Count = o.shards
	cfg.Session.TTL = o.ttl
	cfg.Session.LeaseMargin = o.ttl / 10
	cfg.Session.ExpiryGrace = max(o.ttl/5, cfg.Raft.ElectionTimeout, cfg.Raft.HeartbeatTimeout)
	cfg.Logger = o.logger
	return cfg
}

// security is what the demo's nodes share: an in-process CA, which signs
// every node's certificate (mutual TLS on the raft/RPC port), and one
// gossip key. A real cluster makes the same with holdfastctl cert.
type security struct {
	ca        *certs.CA
	gossipKey []byte
}

func newSecurity() (security, error) {
	ca, err := certs.NewCA("holdfast demo CA")
	if err != nil {
		return security{}, err
	}
	key, _, err := certs.NewGossipKey()
	return security{ca: ca, gossipKey: key}, err
}

// apply gives cfg TLS with a certificate for its node, and the gossip key.
func (s security) apply(cfg *coordinator.Config) error {
	certPEM, keyPEM, err := s.ca.NodeCert(cfg.NodeName)
	if err != nil {
		return err
	}
	cfg.Insecure = false
	cfg.TLS = &coordinator.TLSConfig{CAPEM: s.ca.CertPEM(), CertPEM: certPEM, KeyPEM: keyPEM, RequireTLS: true}
	cfg.Gossip.Keys = [][]byte{s.gossipKey}
	return nil
}

// startNode opens node i's ledger handle and starts its coordinator.
func startNode(ctx context.Context, o options, sec security, i int, dir, db string, join []string) (*node, error) {
	cfg := config(o, i, dir)
	if err := sec.apply(&cfg); err != nil {
		return nil, err
	}
	led, err := openLedger(ctx, db, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	n := &node{name: cfg.NodeName, net: newPausableNet(), led: led, frz: &freezer{}}
	n.ws = newWorkers(led, n.frz, o.interval)
	cfg.Network, cfg.Shards.Handler, cfg.Join = n.net, n.ws, join
	if n.c, err = coordinator.New(cfg); err != nil {
		n.ws.close()
		led.close()
		return nil, err
	}
	n.aud = startAuditor(n, 4*o.interval)
	return n, nil
}

// startCluster starts every node, with mutual TLS from one in-process CA
// and encrypted gossip; each joins through the first one's gossip address.
func startCluster(ctx context.Context, o options, dir, db string) ([]*node, error) {
	sec, err := newSecurity()
	if err != nil {
		return nil, err
	}
	var nodes []*node
	for i := range o.nodes {
		var join []string
		if i > 0 {
			join = []string{nodes[0].c.GossipAddr()}
		}
		n, err := startNode(ctx, o, sec, i, dir, db, join)
		if err != nil {
			closeAll(nodes)
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// poll calls done every 20ms until it reports true or ctx ends.
func poll(ctx context.Context, what string, done func() bool) error {
	for !done() {
		if !sleep(ctx, 20*time.Millisecond) {
			return fmt.Errorf("timed out waiting until %s", what)
		}
	}
	return nil
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// raftLeader returns the node that is raft leader, if any.
func raftLeader(nodes []*node) *node {
	for _, n := range nodes {
		if n.c.RaftState() == coordinator.StateLeader {
			return n
		}
	}
	return nil
}

// formed reports whether there is a raft leader and every node knows the
// cluster.
func formed(nodes []*node) bool {
	for _, n := range nodes {
		if !n.c.Formation().Formed {
			return false
		}
	}
	return raftLeader(nodes) != nil
}

// settled reports whether, as c's replica shows it, every shard is owned,
// none is being handed off, every node owns at least the share the leader
// guarantees a newcomer (floor(S/n·(1-ε)), see package shardown), and
// each node's workers are running. The leader may still move a shard
// later to improve the balance; the demo does not depend on it.
func settled(c *coordinator.Coordinator, nodes []*node) bool {
	perNode := map[string]int{}
	for s := range c.Shards() {
		sh, ok := c.Table().Shard(coordinator.ShardID(s))
		o := sh.Owner
		if !ok || sh.State != coordinator.ShardOwned {
			return false
		}
		perNode[o.Node.Name]++
	}
	lower := int(math.Floor(float64(c.Shards())/float64(len(nodes))*0.95 + 1e-9))
	for _, n := range nodes {
		owned := perNode[n.name]
		if owned < lower || len(n.c.Owned()) != owned || n.ws.count() != owned {
			return false
		}
	}
	return true
}

// stable waits until settled has held for quiet without the table
// changing.
func stable(ctx context.Context, c *coordinator.Coordinator, nodes []*node, quiet time.Duration) error {
	var since time.Time
	var version uint64
	return poll(ctx, "every shard is owned", func() bool {
		v := c.Table().Version()
		if !settled(c, nodes) || v != version {
			since, version = time.Now(), v
			return false
		}
		return time.Since(since) >= quiet
	})
}

// shutdown leaves the cluster gracefully, one node at a time, the raft
// leader last (fewer elections): each hands its shards to the nodes still
// running (its Release hooks stop its workers first) and ends its session.
func shutdown(o options, nodes []*node, leader *node, say func(format string, args ...any)) error {
	for _, n := range nodes {
		n.aud.stop()
	}
	// Shutdown bounds its handoff by 2 × TTL + drain; leave room to leave.
	limit := 2*o.ttl + 4*time.Second
	for _, n := range shutdownOrder(nodes, leader) {
		owned := len(n.c.Owned())
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		start := time.Now()
		err := n.c.Shutdown(ctx)
		cancel()
		n.ws.close()
		if err != nil {
			return fmt.Errorf("%s: graceful shutdown: %w", n.name, err)
		}
		if n == leader {
			say("%s\tleft last in %s (no node was left to take its %s)", n.name, round(time.Since(start)), plural(owned, "shard"))
		} else {
			say("%s\thanded %s off and left in %s", n.name, plural(owned, "shard"), round(time.Since(start)))
		}
	}
	return nil
}

// shutdownOrder returns the nodes in the order they leave: raft non-voters
// first, then voters, the raft leader last, so that a quorum of voters is
// always there to commit each node's handoffs and departure.
func shutdownOrder(nodes []*node, leader *node) []*node {
	voters := map[string]bool{}
	for _, id := range leader.c.Voters() {
		voters[id] = true
	}
	rank := func(n *node) int {
		switch {
		case n == leader:
			return 2
		case voters[n.c.ID()]:
			return 1
		}
		return 0
	}
	order := slices.Clone(nodes)
	slices.SortStableFunc(order, func(a, b *node) int { return rank(a) - rank(b) })
	return order
}

// closeAll stops whatever is left at once: after an error, or after
// shutdown (then it only closes the ledger handles). A paused node is
// resumed first so that nothing stays blocked.
func closeAll(nodes []*node) {
	for _, n := range nodes {
		n.net.resume()
		n.frz.thaw()
	}
	for _, n := range nodes {
		n.aud.stop()
		n.c.Close()
		n.ws.close()
		n.led.close()
	}
}

// newLogger returns holdfast's logger for -log: nil (discard) by default,
// so the narration is all one sees.
func newLogger(level string) (*slog.Logger, error) {
	if level == "" {
		return nil, nil // nil: holdfast discards its logs
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(logOutput, &slog.HandlerOptions{Level: l})), nil
}
