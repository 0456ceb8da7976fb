package main

import (
	"fmt"
	"log"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// compareShards is the shard count of the holdfast clusters of the side by
// side workloads (the lookup reads them).
const compareShards = 1024

// pair is a holdfast cluster and an etcd cluster with the same number of
// replicas, both running for the whole comparison at that count.
type pair struct {
	replicas int
	hf       *hfCluster
	etcd     *etcdCluster
	helper   *hfNode // a non-voter "client node", started for workloads 3 and 4
	onLeader bool    // the single client and the waiters run on the raft leader
	early    bool    // holdfast releases with Lease.ReleaseBeforeCommit (the opt-in rows)
}

func startPair(replicas int) (*pair, error) {
	h, err := startHF(hfOptions{voters: replicas, shards: compareShards}, 90*time.Second)
	if err != nil {
		return nil, fmt.Errorf("holdfast: %w", err)
	}
	e, err := startEtcd(replicas, 60*time.Second)
	if err != nil {
		h.close()
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return &pair{replicas: replicas, hf: h, etcd: e}, nil
}

func (p *pair) close() {
	p.hf.close()
	p.etcd.close()
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

// ab runs rounds A/B: holdfast, etcd, holdfast, etcd, ... A round that
// fails (on a loaded machine a 2 s session can expire) is run again, at
// most twice per round, and noted under the table.
func ab(sec *section, what string, rounds int, hf, etcd func(round int) error) error {
	for r := 0; r < rounds; r++ {
		if err := retryRound(sec, what, "holdfast", r, hf); err != nil {
			return err
		}
		if err := retryRound(sec, what, "etcd", r, etcd); err != nil {
			return err
		}
	}
	return nil
}

func retryRound(sec *section, what, system string, r int, f func(round int) error) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = f(r); err == nil {
			return nil
		}
		sec.note("Note: %s, %s round %d failed and was run again: %v.", what, system, r, err)
		log.Printf("%s: %s round %d failed (try %d): %v", what, system, r, try+1, err)
	}
	return fmt.Errorf("%s round %d: %w", system, r, err)
}

// runCompare runs the selected side by side workloads at one replica
// count and adds their metrics to sec.
func runCompare(o *options, replicas int, sec *section) error {
	t0 := time.Now()
	p, err := startPair(replicas)
	if err != nil {
		return err
	}
	defer p.close()
	log.Printf("compare r=%d: both clusters up in %v", replicas, time.Since(t0).Round(time.Millisecond))
	if o.selected("acquire") {
		if err := acquireWorkload(o, p, sec, 1, "1. acquire+release, 1 client"); err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		p.early = true
		err := acquireWorkload(o, p, sec, 1, "1E. as 1, holdfast's opt-in ReleaseBeforeCommit")
		p.early = false
		if err != nil {
			return fmt.Errorf("acquire, early release: %w", err)
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

// acquireWorkload: workloads 1 and 2. holdfast's contenders are spread over
// the voters; etcd's each have a client (balanced over every member) and a
// session.
func acquireWorkload(o *options, p *pair, sec *section, clients int, title string) error {
	nodes := p.voters()
	if clients == 1 {
		nodes = []*hfNode{p.client()}
	}
	tput := sec.metric(title, "throughput", "ops/s", true)
	p50 := sec.metric(title, "latency p50", "ms", false)
	p99 := sec.metric(title, "latency p99", "ms", false)
	record := func(res opsResult, hf bool) {
		add := func(mm *metric, v float64) {
			if hf {
				mm.hf = append(mm.hf, v)
			} else {
				mm.etcd = append(mm.etcd, v)
			}
		}
		add(tput, res.perSecond())
		add(p50, ms(res.lat.quantile(0.50)))
		add(p99, ms(res.lat.quantile(0.99)))
	}
	// Warm up both (connections, sessions, the first fsyncs); not recorded.
	if _, err := hfAcquireRelease(nodes, clients, o.warmup, "warmup", p.early); err != nil {
		return err
	}
	if _, err := etcdAcquireRelease(p.etcd, clients, o.warmup, "/holdfast-bench/warmup"); err != nil {
		return err
	}
	return ab(sec, title, o.rounds, func(r int) error {
		res, err := hfAcquireRelease(nodes, clients, o.duration, fmt.Sprintf("acq-%d-%d", clients, r), p.early)
		if err == nil {
			record(res, true)
		}
		return err
	}, func(r int) error {
		res, err := etcdAcquireRelease(p.etcd, clients, o.duration, fmt.Sprintf("/holdfast-bench/acq-%d-%d", clients, r))
		if err == nil {
			record(res, false)
		}
		return err
	})
}

// failoverWorkload: workload 3, one kill per system per round.
func failoverWorkload(o *options, p *pair, sec *section) error {
	const title = "3. failover after kill, TTL 2 s"
	m := sec.metric(title, "kill → next holder", "ms", false)
	waiter := p.client()
	err := ab(sec, title, o.failovers, func(r int) error {
		d, err := hfFailover(p.hf, waiter, fmt.Sprintf("failover-%d", r))
		if err == nil {
			m.hf = append(m.hf, ms(d))
		}
		return err
	}, func(r int) error {
		d, err := etcdFailover(p.etcd, fmt.Sprintf("/holdfast-bench/failover-%d", r))
		if err == nil {
			m.etcd = append(m.etcd, ms(d))
		}
		return err
	})
	if err == nil {
		sec.note("Failover (r=%d), every kill in ms: holdfast %s; etcd %s.", p.replicas, fmtList(m.hf), fmtList(m.etcd))
	}
	return err
}

// leaderVariants repeats workloads 1 and 4 with holdfast's single client
// and waiter on the raft leader (etcd's side is run again unchanged, A/B).
func leaderVariants(o *options, p *pair, sec *section) error {
	p.onLeader = true
	defer func() { p.onLeader = false }()
	if o.selected("acquire") {
		if err := acquireWorkload(o, p, sec, 1, "1L. as 1, holdfast client on the raft leader"); err != nil {
			return fmt.Errorf("acquire on the leader: %w", err)
		}
		p.early = true
		err := acquireWorkload(o, p, sec, 1, "1LE. as 1L, holdfast's opt-in ReleaseBeforeCommit")
		p.early = false
		if err != nil {
			return fmt.Errorf("acquire on the leader, early release: %w", err)
		}
	}
	if o.selected("handoff") {
		if err := handoffWorkload(o, p, sec, "4L. as 4, holdfast waiter on the raft leader"); err != nil {
			return fmt.Errorf("handoff on the leader: %w", err)
		}
	}
	return nil
}

// handoffWorkload: workload 4, o.handoffs handoffs per system per round.
func handoffWorkload(o *options, p *pair, sec *section, title string) error {
	p50 := sec.metric(title, "resign → next holder p50", "ms", false)
	p99 := sec.metric(title, "resign → next holder p99", "ms", false)
	waiter := p.client()
	return ab(sec, title, o.rounds, func(r int) error {
		lat, err := hfHandoffs(p.helper, waiter, o.handoffs, fmt.Sprintf("handoff-%d", r))
		if err == nil {
			p50.hf = append(p50.hf, ms(lat.quantile(0.5)))
			p99.hf = append(p99.hf, ms(lat.quantile(0.99)))
		}
		return err
	}, func(r int) error {
		lat, err := etcdHandoffs(p.etcd, o.handoffs, fmt.Sprintf("/holdfast-bench/handoff-%d", r))
		if err == nil {
			p50.etcd = append(p50.etcd, ms(lat.quantile(0.5)))
			p99.etcd = append(p99.etcd, ms(lat.quantile(0.99)))
		}
		return err
	})
}

// lookupWorkload: workload 5. holdfast reads its local replica; etcd
// answers a Get of a key per shard holding the same owner fields.
func lookupWorkload(o *options, p *pair, sec *section) error {
	const title = "5. ownership lookup"
	c := p.client().c
	if err := poll(60*time.Second, allOwned(c, compareShards)); err != nil {
		return err
	}
	cli, err := p.etcd.client()
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := etcdLoadShards(cli, c, compareShards); err != nil {
		return err
	}
	lin := sec.metric(title, "Owner vs Get (linearizable)", "ns", false)
	ser := sec.metric(title, "Owner vs Get (serializable)", "ns", false)
	var getP50, getP99 []float64
	err = ab(sec, title, o.rounds, func(int) error {
		ns, err := hfLookup(c, compareShards, o.lookupDur)
		if err == nil {
			lin.hf = append(lin.hf, ns)
			ser.hf = append(ser.hf, ns)
		}
		return err
	}, func(int) error {
		nsLin, lat, err := etcdLookup(cli, compareShards, o.lookupDur, false)
		if err != nil {
			return err
		}
		nsSer, _, err := etcdLookup(cli, compareShards, o.lookupDur, true)
		if err != nil {
			return err
		}
		lin.etcd, ser.etcd = append(lin.etcd, nsLin), append(ser.etcd, nsSer)
		getP50 = append(getP50, float64(lat.quantile(0.5))/1e3)
		getP99 = append(getP99, float64(lat.quantile(0.99))/1e3)
		return nil
	})
	if err == nil {
		sec.note("Lookup (r=%d): etcd linearizable Get latency p50 %.0f µs, p99 %.0f µs (medians of rounds); holdfast's Owner is timed in batches of 65,536 calls.",
			p.replicas, median(getP50), median(getP99))
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
