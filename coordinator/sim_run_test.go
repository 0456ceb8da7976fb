package coordinator_test

import (
	"context"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/lincheck"
)

// One TestSimulation seed: TestChaos's cluster, workload and checks (5
// nodes, 3 voters, lease workers and zombies, shard handlers, cut-short
// and duplicated requests; I1–I4, I6, no orphans, no blocked Acquire),
// the faults of simFaultKinds, the linearizability workload of
// sim_lin_test.go, every node on its own simClock, run inside a
// testing/synctest bubble so that the minute of simulated time a seed
// takes costs only the CPU its events need.

// simBrokenDrift is the clock rate bound of -sim.break=drift: clocks up to 40 %
// off, where the nodes are configured for 1 %.
const simBrokenDrift = 0.4

// simFaultTime is how long the nemesis injects faults in one seed.
const simFaultTime = 3 * time.Second

// simRun is the state of one seed.
type simRun struct {
	*chaosRun
	tr     *simTrace
	lin    *lincheck.Recorder
	clocks []*simClock
	disks  []*simDisk
	drift  float64 // the clock rate bound the nodes run within
	brk    string  // a deliberately broken build (-sim.break), "" for none
	// linRejected: porcupine rejected the lease history with
	// -sim.lin-strict=false (otherwise it is a violation).
	linRejected bool
}

// simResult is what a seed reports.
type simResult struct {
	simulated  time.Duration
	faults     int
	grants     int
	violations []string
	events     string // the harness's event log
	lin        lincheck.Stats
	linWall    time.Duration // how long porcupine took
	sim        *simRun
}

// finishSimSeed checks the seed's lease history for linearizability, out
// of the bubble (porcupine's timeout is a timer: in the bubble it would
// wait on virtual time that never passes while porcupine computes), and
// fails t on any violation of the seed, with the trace before the first.
func finishSimSeed(t *testing.T, res *simResult, dir string) {
	s := res.sim
	if s == nil {
		return
	}
	s.t = t
	start := time.Now()
	linV, linSt := s.linCheck(dir)
	res.linWall = time.Since(start)
	res.lin = linSt
	if linV != "" {
		res.violations = append(res.violations, linV)
	}
	s.report(*res)
}

// runSimSeed runs seed inside the calling bubble and checks every
// invariant but linearizability (finishSimSeed does, out of the bubble).
func runSimSeed(t *testing.T, seed uint64, brk string) simResult {
	// Registered first, so it runs after every other cleanup (the
	// cluster's Close among them): see simDrain.
	g0 := runtime.NumGoroutine()
	t.Cleanup(func() { simDrain(g0) })
	// hashicorp/raft draws its election timeouts from the global math/rand;
	// with GODEBUG=randseednop=0 (the children of TestSimulation run so)
	// Seed fixes them.
	mrand.Seed(int64(seed)) //nolint:staticcheck // the library's source, see above
	rng := rand.New(rand.NewPCG(seed, 0x73696d))
	s := &simRun{chaosRun: newChaosRun(t, seed), brk: brk}
	r := s.chaosRun
	r.replay = func(seed uint64) string { return simReplay(seed, brk) }
	r.inject = s.simFault
	defer r.stopWorkers()
	s.tr = newSimTrace()
	s.tr.t0 = r.h.t0
	r.h.note = s.tr.event
	s.lin = lincheck.NewRecorder(func() int64 { return int64(time.Since(r.h.t0)) })
	s.drift = coordinator.DefaultLocalConfig().Session.MaxClockDrift
	switch brk {
	case "margin0":
		s.drift = 0
	case "drift":
		s.drift = simBrokenDrift
	}
	s.clocks = make([]*simClock, chaosNodes)
	s.disks = make([]*simDisk, chaosNodes)
	for i := range s.clocks {
		s.clocks[i] = newSimClock(simDriftRate(rng, s.drift))
		s.disks[i] = newSimDisk()
	}
	r.cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: chaosNodes, Voters: 3, InMemory: true, Seed: int64(seed),
		Configure: s.configure})
	cl := r.cl
	cl.WaitFormed(formTimeout)
	cfg := cl.Node(0).Config
	settle := cfg.Session.TTL + cfg.Session.ExpiryGrace
	for i := range r.workers {
		r.workers[i] = 1
		r.spawn(i, cl.Node(i).C())
		if i < simLinNodes {
			r.goTracked(func() { s.linWork(i) })
		}
		if i < simLinReaders {
			r.goTracked(func() { s.linRead(i) })
		}
	}
	faults := s.drive(rng, time.Now().Add(simFaultTime))
	driven := time.Now()
	s.tr.event("faults over: healing")
	cl.Heal()
	cl.Net.SetDelay("", "", 0, 0)
	cl.Net.SetLoss(0)
	for _, c := range s.clocks {
		c.setRate(simDriftRate(rng, s.drift))
	}
	if err := s.waitFormed(); err != nil {
		// Not a test harness failure: the cluster must heal (I8). The seed
		// reports it with its trace, and its other checks cannot run.
		v := fmt.Sprintf("I8: the cluster did not form again within %v of the heal (at %.1fms): %v\n%s",
			formTimeout, float64(time.Since(r.h.t0))/1e6, err, s.nodeStates())
		return simResult{simulated: time.Since(r.h.t0), faults: faults, violations: []string{v},
			events: s.tr.harnessLog(), sim: s}
	}
	formed := time.Now()
	s.tr.event("formed again")
	return s.healedResult(formed, driven, faults, settle)
}

// healedResult checks, on a cluster formed again at formed after the
// faults that ended at driven, the invariants of recovery, leases, shards
// and requests, and returns the seed's result with every violation found.
func (s *simRun) healedResult(formed, driven time.Time, faults int, settle time.Duration) simResult {
	r := s.chaosRun
	_, i6, violations := r.recover(formed, driven, r.cl.Node(0).Config.Session.TTL, settle)
	now := time.Now()
	lv, st := r.h.check(now, settle)
	sv, _ := r.checkShards(now, settle)
	violations = append(append(violations, lv...), sv...)
	r.req.mu.Lock()
	violations = append(violations, r.req.violations...)
	r.req.mu.Unlock()
	if i6 != "" {
		violations = append(violations, i6)
	}
	return simResult{simulated: time.Since(r.h.t0), faults: faults, grants: st.grants, violations: violations,
		events: s.tr.harnessLog(), sim: s}
}

// nodeStates describes every node as it sees itself and the cluster: its
// identity, raft role, the leader it knows, the voters and non-voters of
// its configuration, its applied index and formation progress. It goes in
// an I8 violation, where the trace's last seconds often show only the
// election that keeps failing.
func (s *simRun) nodeStates() string {
	var b strings.Builder
	for _, n := range s.cl.Nodes() {
		c := n.C()
		if c == nil {
			fmt.Fprintf(&b, "  %s: down\n", n.Name)
			continue
		}
		leader, _ := c.RaftLeader()
		fmt.Fprintf(&b, "  %s: id %.8s cluster %.8s %v leader %q (%.8s) voters %v non-voters %v applied %d; %s\n",
			n.Name, c.ID(), c.ClusterID(), c.RaftState(), leader.Name, leader.ID, short8(c.Voters()), short8(c.NonVoters()),
			c.AppliedIndex(), c.Formation().Progress)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// short8 shortens raft IDs to their first 8 characters.
func short8(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:min(8, len(id))]
	}
	return out
}

// waitFormed waits until every running node is in one cluster with a
// leader, as Cluster.WaitFormed does, but returns what it last saw rather
// than failing the test.
func (s *simRun) waitFormed() error {
	cl := s.cl
	return holdfasttest.Poll(formTimeout, func() error {
		if err := cl.Formed(); err != nil {
			return err
		}
		_, err := cl.Leader()
		return err
	})
}

// configure sets node i up: the chaos run's shards, the node's clock, its
// logger into the trace, and the broken build's settings.
func (s *simRun) configure(i int, c *coordinator.Config) {
	s.configureNode(i, c)
	c.Clock = s.clocks[i]
	coordinator.SetLogFS(c, s.disks[i])
	c.Raft.LogSegmentSize = 64 << 10 // small segments: an in-memory disk holds them whole
	c.Logger = s.tr.logger(c.NodeName)
	if s.brk == "margin0" {
		// The holder's belief ends when the leader may expire its session:
		// no margin for the renewal's travel time (1 ms, not 0, which
		// Validate refuses; a belief's clock step is half the margin, and
		// below a millisecond its timers would spin the virtual clock).
		c.Session.LeaseMargin = time.Millisecond
		c.Session.MaxClockDrift = 0
	}
}

// drive injects faults until deadline, one at a time, and returns how many.
func (s *simRun) drive(rng *rand.Rand, deadline time.Time) int {
	n := 0
	for time.Now().Before(deadline) {
		pace(context.Background(), between(rng, 300*time.Millisecond, 800*time.Millisecond))
		kind := simFaultKinds[rng.IntN(len(simFaultKinds))]
		victim := rng.IntN(chaosNodes)
		s.fault(rng, kind, victim)
		n++
	}
	return n
}

// report fails the seed on violations, with the trace before the first.
func (s *simRun) report(res simResult) {
	if len(res.violations) == 0 {
		return
	}
	const maxShown = 10
	shown := res.violations[:min(len(res.violations), maxShown)]
	at, ok := simViolationTime(shown[0])
	if !ok {
		at = res.simulated
	}
	s.t.Errorf("seed %d: %d invariant violations (first %d):\n  %s\n%s\nreplay: %s",
		s.seed, len(res.violations), len(shown), strings.Join(shown, "\n  "), s.tr.tail(at), s.replay(s.seed))
}

// simReplay is the command that runs seed again.
func simReplay(seed uint64, brk string) string {
	cmd := fmt.Sprintf("go test ./coordinator -run 'TestSimulation$' -seed %d", seed)
	switch brk {
	case "":
	case "release-unchecked":
		cmd = strings.Replace(cmd, "go test", "go test -tags holdfast_break_release", 1) + " -sim.break=" + brk
	default:
		cmd += " -sim.break=" + brk
	}
	return cmd
}

// simDrainLimit bounds simDrain: memberlist's probe interval (1 s in its
// local profile) scaled by its health awareness (at most 8×), and more.
const simDrainLimit = 20 * time.Second

// simDrain lets the bubble's virtual time run, after the cluster has
// closed, until no more goroutines run than before it started (g0), or for
// simDrainLimit. memberlist's Shutdown does not wait for a probe in flight:
// a probe whose direct ping failed waits on a timer of one probe interval
// for its last answer. The bubble's time stops once its main goroutine
// exits, so such a probe was left blocked for ever, and synctest failed the
// seed with "main bubble goroutine has exited but blocked goroutines
// remain" (seed 47,558 of the long run, 1 in about 47,000).
func simDrain(g0 int) {
	for start := time.Now(); runtime.NumGoroutine() > g0 && time.Since(start) < simDrainLimit; {
		time.Sleep(50 * time.Millisecond) // virtual time, in the bubble
	}
}
