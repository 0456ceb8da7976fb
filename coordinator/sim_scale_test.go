package coordinator_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestSimulatedScale is the scale curve in virtual time (issue 31): for each
// node count of HOLDFAST_SIM_SCALE (e.g. 64,128,256,1000) it starts that
// many nodes in a testing/synctest bubble on the in-memory network, 3
// voters (raft log on an in-memory disk, as TestSimulation's) and the rest
// diskless outside raft under Config.Cluster.ReplicaFeed, 1,024 shards,
// DefaultLocalConfig timings, and measures in virtual time how long the
// cluster takes to form, to own every shard and to settle, then the CPU
// the leader's goroutines spend per virtual second over an idle window.
// In the bubble a node's CPU work costs no virtual time, as if each node
// had a machine of its own: the figures are the protocol's, not the host's
// (in real time two cores stop forming a cluster past 128 nodes).
//
// Opt-in, as the other soak measurements: it runs only when
// HOLDFAST_SIM_SCALE is set, one point after the other, with GOMAXPROCS 1.
func TestSimulatedScale(t *testing.T) {
	spec := os.Getenv("HOLDFAST_SIM_SCALE")
	if spec == "" {
		t.Skip("an opt-in measurement: set HOLDFAST_SIM_SCALE to node counts, e.g. HOLDFAST_SIM_SCALE=64,128,256,1000")
	}
	var points []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 3 {
			t.Fatalf("HOLDFAST_SIM_SCALE=%q: want node counts of at least 3, comma-separated", spec)
		}
		points = append(points, n)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, n := range points {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			prof := newScaleProfiler()
			defer prof.close()
			cryptotest.SetGlobalRandom(t, uint64(n))
			cpu0, wall0 := processCPU(), time.Now()
			var row simScaleRow
			synctest.Test(t, func(t *testing.T) {
				row = runSimScale(t, n, prof)
			})
			row.realCPU, row.realWall = processCPU()-cpu0, time.Since(wall0)
			t.Logf("%s", row)
		})
	}
}

const (
	simScaleShards = 1024
	simScaleLimit  = 120 * time.Second // virtual: each phase's bound
	simScaleIdle   = 30 * time.Second  // virtual: the idle window
	simScaleQuiet  = 3 * time.Second   // virtual: no table change for this long is settled
	simScaleStep   = 50 * time.Millisecond
	simScaleTrail  = 40 // the most waits a point's trail keeps
)

// simScaleRow is what one point measured; times are virtual, from the
// first node's start, but realCPU and realWall.
type simScaleRow struct {
	nodes                 int
	formed, owned, settle time.Duration
	leader                string
	leaderCPU, allCPU     float64 // % of one core per virtual second over the idle window
	unlabelledCPU         float64
	processCPU            float64 // the whole process's (getrusage), to check the profile's coverage
	lost                  int     // nodes whose session changed (no node is killed)
	maxShards, owners     int     // the most shards one node owns; nodes owning any
	rss, heap             float64
	warnings              string
	realCPU, realWall     time.Duration
	err                   string
}

func (r simScaleRow) String() string {
	s := fmt.Sprintf("nodes=%d shards=%d formed=%.2fs owned=%.2fs settled=%.2fs", r.nodes, simScaleShards,
		r.formed.Seconds(), r.owned.Seconds(), r.settle.Seconds())
	if r.err == "" {
		s += fmt.Sprintf(" leader(%s)CPU=%.2f%%/vs all-nodes=%.1f%%/vs (per node %.2f%%) unlabelled=%.1f%%/vs process=%.1f%%/vs sessions-lost=%d owners=%d max-shards=%d",
			r.leader, r.leaderCPU, r.allCPU, r.allCPU/float64(r.nodes), r.unlabelledCPU, r.processCPU, r.lost, r.owners, r.maxShards)
	}
	s += fmt.Sprintf(" rss=%.0fMiB heap=%.0fMiB warnings=%s real: cpu=%.1fs wall=%.1fs", r.rss, r.heap, r.warnings,
		r.realCPU.Seconds(), r.realWall.Seconds())
	if r.err != "" {
		s += " FAILED: " + r.err
	}
	return s
}

// simScale is one point's cluster and what it has seen of the sessions.
type simScale struct {
	t        *testing.T
	cl       *holdfasttest.Cluster
	sessions map[string]string // node name → first session ID seen
	lost     map[string]bool   // nodes whose session ID changed
	t0       time.Time
	trail    []string // what each wait waited on, each time it changed
}

// runSimScale runs one point inside the calling bubble.
func runSimScale(t *testing.T, n int, prof *scaleProfiler) (row simScaleRow) {
	g0 := runtime.NumGoroutine()
	t.Cleanup(func() { simDrain(g0) }) // after the cluster's Close: stray probes end
	row.nodes = n
	warn := newWarnCounter()
	defer func() { row.warnings = warn.summary() }()
	var diskless []int
	for i := 3; i < n; i++ {
		diskless = append(diskless, i)
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: n, Voters: 3, InMemory: true, Seed: int64(n), NoDataDir: diskless,
		NoStart: true, JoinFirst: 3, Configure: func(_ int, c *coordinator.Config) {
			c.Shards.Count = simScaleShards
			c.Cluster.ReplicaFeed = true
			c.Clock = newSimClock(1) // the bubble's time: the system clock would run in real time
			c.Logger = warn.forNode(c.NodeName)
			if c.DataDir != "" {
				coordinator.SetLogFS(c, newSimDisk())
				c.Raft.LogSegmentSize = 64 << 10 // small segments: an in-memory disk holds them whole
			}
		}})
	t0 := time.Now()
	s := &simScale{t: t, cl: cl, sessions: map[string]string{}, lost: map[string]bool{}, t0: t0}
	defer func() {
		if testing.Verbose() || row.err != "" {
			t.Logf("nodes=%d waited on:\n  %s", n, strings.Join(s.trail, "\n  "))
		}
	}()
	for _, node := range cl.Nodes() {
		startLabelled(node.Name, func() { cl.Start(node.Index) })
	}
	if err := s.wait(s.formed); err != nil {
		row.err = fmt.Sprintf("not formed within %v: %v", simScaleLimit, err)
		return row
	}
	row.formed = time.Since(t0)
	if err := s.wait(s.owned); err != nil {
		row.err = fmt.Sprintf("not every shard owned within %v: %v", simScaleLimit, err)
		return row
	}
	row.owned = time.Since(t0)
	if err := s.settled(); err != nil {
		row.err = fmt.Sprintf("the table did not settle within %v: %v", simScaleLimit, err)
		return row
	}
	row.settle = time.Since(t0)
	row.rss = processRSS()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	row.heap = float64(ms.HeapAlloc) / (1 << 20)
	l, err := cl.Leader()
	if err != nil {
		row.err = err.Error()
		return row
	}
	row.leader = l.Name
	if err := s.idle(prof, &row); err != nil {
		row.err = err.Error()
		return row
	}
	row.owners, row.maxShards = s.spread(l.C().Table())
	row.lost = len(s.lost)
	return row
}

// wait polls cond every simScaleStep of virtual time, noting sessions, for
// at most simScaleLimit.
func (s *simScale) wait(cond func() error) error {
	deadline := time.Now().Add(simScaleLimit)
	last := ""
	for {
		s.noteSessions()
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		// The kind of wait (the error without its numbers, which change
		// from poll to poll) each time it changes, not every poll's.
		kind := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, err.Error())
		if kind != last && len(s.trail) < simScaleTrail {
			last = kind
			s.trail = append(s.trail, fmt.Sprintf("%6.2fs %v", time.Since(s.t0).Seconds(), err))
			if testing.Verbose() {
				// As it happens too: a large point takes many real minutes.
				s.t.Logf("nodes=%d: %s (process cpu %v)", len(s.cl.Nodes()), s.trail[len(s.trail)-1], time.Duration(processCPU()).Round(time.Second))
			}
		}
		time.Sleep(simScaleStep)
	}
}

// formed reports nil once one node leads, every node is formed and in the
// leader's cluster, and a few observers (the first, the middle, the last
// node and the leader) name the leader and see every node alive: a check
// that every node sees every other would cost N² a poll.
func (s *simScale) formed() error {
	l, err := s.cl.Leader()
	if err != nil {
		return err
	}
	nodes := s.cl.Running()
	id := l.C().ClusterID()
	for _, n := range nodes {
		c := n.C()
		// Formed means knowing the cluster's ID; Formation's progress line
		// (which lists and sorts the members) only for the message: asked
		// of every node each poll it made the poll N² work.
		if c.ClusterID() == "" {
			return fmt.Errorf("%s: %s", n.Name, c.Formation().Progress)
		}
		if c.ClusterID() != id {
			return fmt.Errorf("%s in cluster %q, the leader in %q", n.Name, c.ClusterID(), id)
		}
	}
	for _, o := range []*holdfasttest.Node{nodes[0], nodes[len(nodes)/2], nodes[len(nodes)-1], l} {
		// RaftLeader names the leader from a sorted member list: asked of
		// every node each poll, N sorts of N members (a 1,000-node point's
		// goroutine dump caught the harness there); the observers stand
		// for the rest.
		if info, ok := o.C().RaftLeader(); !ok || info.ID != l.C().ID() {
			return fmt.Errorf("%s does not name %s as leader", o.Name, l.Name)
		}
		alive := map[string]bool{}
		for _, m := range o.C().Members() {
			alive[m.Name] = m.State == coordinator.MemberAlive
		}
		for _, n := range nodes {
			if !alive[n.Name] {
				return fmt.Errorf("%s does not see %s alive", o.Name, n.Name)
			}
		}
	}
	return nil
}

// owned reports nil once the leader's table has an owner for every shard.
func (s *simScale) owned() error {
	l, err := s.cl.Leader()
	if err != nil {
		return err
	}
	t := l.C().Table()
	if t.Len() != simScaleShards {
		return fmt.Errorf("the table has %d shards", t.Len())
	}
	free := 0
	for i := range simScaleShards {
		if _, ok := t.Owner(coordinator.ShardID(i)); !ok {
			free++
		}
	}
	if free > 0 {
		return fmt.Errorf("%d shards free", free)
	}
	return nil
}

// settled waits until the leader's table has not changed for simScaleQuiet
// (the rebalancing after the owners' arrival is over).
func (s *simScale) settled() error {
	var last uint64
	since := time.Now()
	return s.wait(func() error {
		l, err := s.cl.Leader()
		if err != nil {
			return err
		}
		if v := l.C().Table().Version(); v != last {
			last, since = v, time.Now()
		}
		if time.Since(since) < simScaleQuiet {
			return fmt.Errorf("the table changed %v ago (version %d)", time.Since(since).Round(time.Millisecond), last)
		}
		return nil
	})
}

// idle profiles the settled cluster over simScaleIdle of virtual time and
// sets the row's CPU figures: CPU nanoseconds per virtual second, in
// percent of one core.
func (s *simScale) idle(prof *scaleProfiler, row *simScaleRow) error {
	if err := prof.start(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	cpu0 := processCPU()
	end := time.Now().Add(simScaleIdle)
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		s.noteSessions()
	}
	p := prof.stop()
	row.processCPU = 100 * float64(processCPU()-cpu0) / float64(simScaleIdle)
	if p.err != nil {
		return fmt.Errorf("profile: %w", p.err)
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(simScaleIdle) }
	row.leaderCPU = pct(p.byNode[row.leader])
	row.unlabelledCPU = pct(p.byNode[scaleUnlabelled])
	for name, d := range p.byNode {
		if name != scaleUnlabelled {
			row.allCPU += pct(d)
		}
	}
	return nil
}

// noteSessions records each node's session ID the first time it has one,
// and the nodes whose session changed since: no node is killed, so each is
// a session that expired unprovoked.
func (s *simScale) noteSessions() {
	for _, n := range s.cl.Running() {
		info, ok := n.C().Session()
		if !ok {
			continue
		}
		if first, seen := s.sessions[n.Name]; !seen {
			s.sessions[n.Name] = info.ID
		} else if first != info.ID {
			s.lost[n.Name] = true
		}
	}
}

// spread counts the nodes that own a shard and the most shards one owns.
func (s *simScale) spread(t *coordinator.ShardTable) (owners, most int) {
	by := map[string]int{}
	for i := range simScaleShards {
		if h, ok := t.Owner(coordinator.ShardID(i)); ok {
			by[h.Node.Name]++
		}
	}
	for _, c := range by {
		most = max(most, c)
	}
	return len(by), most
}
