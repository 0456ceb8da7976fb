package main

import (
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// compareShards is the shard count of the holdfast clusters of the side by
// side workloads (the lookup reads them).
const compareShards = 1024

// pair is a holdfast cluster and each peer's servers with the same number
// of replicas, all running for the whole comparison at that count.
type pair struct {
	replicas int
	hf       *hfCluster
	peers    []runningPeer
	helper   *hfNode // a non-voter "client node", started for workloads 3 and 4
	onLeader bool    // the single client and the waiters run on the raft leader
}

func startPair(kinds []*peerKind, replicas int) (*pair, error) {
	h, err := startHF(hfOptions{voters: replicas, shards: compareShards}, 90*time.Second)
	if err != nil {
		return nil, fmt.Errorf("holdfast: %w", err)
	}
	ps, err := startPeers(kinds, replicas)
	if err != nil {
		h.close()
		return nil, err
	}
	return &pair{replicas: replicas, hf: h, peers: ps}, nil
}

func (p *pair) close() {
	p.hf.close()
	closePeers(p.peers)
}

// sides returns holdfast's round, then each peer's (run(peer, round)).
func (p *pair) sides(hf func(round int) error, run func(rp runningPeer, round int) error) []side {
	out := []side{{hfName, hf}}
	for _, rp := range p.peers {
		out = append(out, side{rp.kind.name, func(r int) error { return run(rp, r) }})
	}
	return out
}

// voters returns the voter-eligible running nodes.
func (p *pair) voters() []*hfNode {
	var out []*hfNode
	for _, n := range p.hf.running() {
		if n.eligible && isVoter(n) {
			out = append(out, n)
		}
	}
	return out
}

func isVoter(n *hfNode) bool {
	for _, v := range n.c.Voters() {
		if v == n.c.ID() {
			return true
		}
	}
	return false
}

// client returns the voter a single client uses: by default a follower
// when there is one (its commands are forwarded to the leader, as for most
// nodes of a real cluster), else the only voter; with -hf-client leader,
// the raft leader.
func (p *pair) client() *hfNode {
	vs := p.voters()
	for _, n := range vs {
		if (n.c.RaftState() == coordinator.StateLeader) == p.onLeader {
			return n
		}
	}
	return vs[0]
}

// runCompare runs the selected side by side workloads at one replica
// count and adds their metrics to sec.
func runCompare(o *options, replicas int, sec *section) error {
	t0 := time.Now()
	p, err := startPair(o.peers, replicas)
	if err != nil {
		return err
	}
	defer p.close()
	log.Printf("compare r=%d: both clusters up in %v", replicas, time.Since(t0).Round(time.Millisecond))
	if o.selected("acquire") {
		if err := acquireWorkload(o, p, sec, 1, "1. acquire+release, 1 client"); err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
	}
	if o.selected("contended") {
		if err := acquireWorkload(o, p, sec, 8, "2. acquire+release, 8 clients"); err != nil {
			return fmt.Errorf("contended: %w", err)
		}
	}
	if o.selected("failover") || o.selected("handoff") {
		if err := p.startHelper(); err != nil {
			return err
		}
	}
	if o.selected("failover") {
		if err := failoverWorkload(o, p, sec); err != nil {
			return fmt.Errorf("failover: %w", err)
		}
	}
	if o.selected("handoff") {
		if err := handoffWorkload(o, p, sec, "4. graceful handoff"); err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
	}
	if o.leaderRows && replicas > 1 {
		if err := leaderVariants(o, p, sec); err != nil {
			return err
		}
	}
	if o.selected("lookup") {
		if err := lookupWorkload(o, p, sec); err != nil {
			return fmt.Errorf("lookup: %w", err)
		}
	}
	log.Printf("compare r=%d: done in %v", replicas, time.Since(t0).Round(time.Millisecond))
	return nil
}

// startHelper starts the non-voter client node that holds the lease in the
// handoff workload, drained so that it owns no shard.
func (p *pair) startHelper() error {
	n, err := p.hf.add(false)
	if err != nil {
		return err
	}
	if err := poll(30*time.Second, n.c.Ready); err != nil {
		return fmt.Errorf("helper node: %w", err)
	}
	if err := drainNode(n, 10*time.Second); err != nil {
		return fmt.Errorf("draining the helper node: %w", err)
	}
	p.helper = n
	return nil
}

// acquireWorkload: workloads 1 and 2, once per release mode. holdfast's
// contenders are spread over the voters; each peer's have a client and a
// session each.
func acquireWorkload(o *options, p *pair, sec *section, clients int, title string) error {
	nodes := p.voters()
	if clients == 1 {
		nodes = []*hfNode{p.client()}
	}
	for _, mode := range releaseModes {
		if err := acquireRows(o, p, sec, nodes, clients, mode.titled(title), mode); err != nil {
			return err
		}
	}
	return nil
}

func acquireRows(o *options, p *pair, sec *section, nodes []*hfNode, clients int, title string, mode releaseMode) error {
	tput := sec.metric(title, "throughput", "ops/s", true)
	p50 := sec.metric(title, "latency p50", "ms", false)
	p99 := sec.metric(title, "latency p99", "ms", false)
	record := func(system string, res opsResult) {
		tput.add(system, res.perSecond())
		p50.add(system, ms(res.lat.quantile(0.50)))
		p99.add(system, ms(res.lat.quantile(0.99)))
	}
	// Warm up every system (connections, sessions, the first fsyncs); not
	// recorded.
	if _, err := hfAcquireRelease(nodes, clients, o.warmup, "warmup", mode); err != nil {
		return err
	}
	for _, rp := range p.peers {
		if _, err := rp.p.acquireRelease(clients, o.warmup, peerKey("warmup")); err != nil {
			return fmt.Errorf("%s: %w", rp.kind.name, err)
		}
	}
	name := func(r int) string { return fmt.Sprintf("acq-%d-%d", clients, r) }
	return ab(sec, title, o.rounds, p.sides(func(r int) error {
		res, err := hfAcquireRelease(nodes, clients, o.duration, name(r), mode)
		if err == nil {
			record(hfName, res)
		}
		return err
	}, func(rp runningPeer, r int) error {
		res, err := rp.p.acquireRelease(clients, o.duration, peerKey(name(r)))
		if err == nil {
			record(rp.kind.name, res)
		}
		return err
	}))
}

// failoverWorkload: workload 3, one kill per system per round.
func failoverWorkload(o *options, p *pair, sec *section) error {
	const title = "3. failover after kill, TTL 2 s"
	m := sec.metric(title, "kill → next holder", "ms", false)
	waiter := p.client()
	name := func(r int) string { return fmt.Sprintf("failover-%d", r) }
	err := ab(sec, title, o.failovers, p.sides(func(r int) error {
		d, err := hfFailover(p.hf, waiter, name(r))
		if err == nil {
			m.add(hfName, ms(d))
		}
		return err
	}, func(rp runningPeer, r int) error {
		d, err := rp.p.failover(peerKey(name(r)))
		if err == nil {
			m.add(rp.kind.name, ms(d))
		}
		return err
	}))
	if err == nil {
		sec.note("Failover (r=%d), every kill in ms: %s.", p.replicas, p.eachSystem(m))
	}
	return err
}

// eachSystem lists m's values per system: "holdfast 1, 2; etcd 3, 4".
func (p *pair) eachSystem(m *metric) string {
	out := []string{hfName + " " + fmtList(m.of(hfName))}
	for _, rp := range p.peers {
		out = append(out, rp.kind.name+" "+fmtList(m.of(rp.kind.name)))
	}
	return strings.Join(out, "; ")
}

// leaderVariants repeats workloads 1 and 4 with holdfast's single client
// and waiter on the raft leader (the peers' side is run again unchanged,
// A/B).
func leaderVariants(o *options, p *pair, sec *section) error {
	p.onLeader = true
	defer func() { p.onLeader = false }()
	if o.selected("acquire") {
		if err := acquireWorkload(o, p, sec, 1, "1L. as 1, holdfast client on the raft leader"); err != nil {
			return fmt.Errorf("acquire on the leader: %w", err)
		}
	}
	if o.selected("handoff") {
		if err := handoffWorkload(o, p, sec, "4L. as 4, holdfast waiter on the raft leader"); err != nil {
			return fmt.Errorf("handoff on the leader: %w", err)
		}
	}
	return nil
}

// handoffWorkload: workload 4, o.handoffs handoffs per system per round,
// once per release mode.
func handoffWorkload(o *options, p *pair, sec *section, title string) error {
	for _, mode := range releaseModes {
		if err := handoffRows(o, p, sec, mode.titled(title), mode); err != nil {
			return err
		}
	}
	return nil
}

func handoffRows(o *options, p *pair, sec *section, title string, mode releaseMode) error {
	p50 := sec.metric(title, "resign → next holder p50", "ms", false)
	p99 := sec.metric(title, "resign → next holder p99", "ms", false)
	record := func(system string, lat latencies) {
		p50.add(system, ms(lat.quantile(0.5)))
		p99.add(system, ms(lat.quantile(0.99)))
	}
	waiter := p.client()
	name := func(r int) string { return fmt.Sprintf("handoff-%d", r) }
	return ab(sec, title, o.rounds, p.sides(func(r int) error {
		lat, err := hfHandoffs(p.helper, waiter, o.handoffs, name(r), mode)
		if err == nil {
			record(hfName, lat)
		}
		return err
	}, func(rp runningPeer, r int) error {
		lat, err := rp.p.handoffs(o.handoffs, peerKey(name(r)))
		if err == nil {
			record(rp.kind.name, lat)
		}
		return err
	}))
}

// lookupWorkload: workload 5. holdfast reads its local replica; each peer
// answers a read of a record per shard holding the same owner fields.
func lookupWorkload(o *options, p *pair, sec *section) error {
	const title = "5. ownership lookup"
	c := p.client().c
	// A table still being balanced has shards between owners, which the
	// timed loop counts as a failure: wait until the voters own every shard
	// within their bounds (the helper node is drained and owns none).
	if err := poll(120*time.Second, balancedAmong(c, len(p.voters()))); err != nil {
		return err
	}
	for _, rp := range p.peers {
		if err := rp.p.loadShards(c, compareShards); err != nil {
			return fmt.Errorf("%s: %w", rp.kind.name, err)
		}
	}
	fresh := sec.metric(title, "Owner vs a read that sees every commit", "ns", false)
	local := sec.metric(title, "Owner vs a server's local read", "ns", false)
	p50, p99 := map[string][]float64{}, map[string][]float64{}
	err := ab(sec, title, o.rounds, p.sides(func(int) error {
		ns, err := hfLookup(c, compareShards, o.lookupDur)
		if err == nil {
			fresh.add(hfName, ns)
			local.add(hfName, ns)
		}
		return err
	}, func(rp runningPeer, _ int) error {
		nsFresh, lat, err := rp.p.lookup(compareShards, o.lookupDur, true)
		if err != nil {
			return err
		}
		nsLocal, _, err := rp.p.lookup(compareShards, o.lookupDur, false)
		if err != nil {
			return err
		}
		n := rp.kind.name
		fresh.add(n, nsFresh)
		local.add(n, nsLocal)
		p50[n] = append(p50[n], float64(lat.quantile(0.5))/1e3)
		p99[n] = append(p99[n], float64(lat.quantile(0.99))/1e3)
		return nil
	}))
	if err == nil {
		var reads []string
		for _, rp := range p.peers {
			k := rp.kind
			reads = append(reads, fmt.Sprintf("%s: %s, then %s; the first's latency p50 %.0f µs, p99 %.0f µs (medians of rounds)",
				k.name, k.fresh, k.local, median(p50[k.name]), median(p99[k.name])))
		}
		sec.note("Lookup (r=%d): holdfast's Owner is timed in batches of 65,536 calls; %s.", p.replicas, strings.Join(reads, "; "))
	}
	return err
}

func fmtList(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f", x)
	}
	return s
}
