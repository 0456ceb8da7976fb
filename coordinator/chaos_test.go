package coordinator_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestChaos runs seeded randomized fault scenarios on a 5-node in-memory
// cluster while workers on every node acquire named leases and write
// to a fenced register, and every node owns some of the 16 shards through
// its Config.Shards.Handler and writes to each owned shard's fenced register (see
// chaos_shards_test.go). Lease calls are also cut short, cancelled and
// duplicated (see chaos_requests_test.go). It then checks the recorded
// history for I1–I4 on leases and shards, I6 on shards after the last
// heal, and that no lease request leaves an orphan or a blocked Acquire.
// Each seed is a subtest "seed=S"; a failing seed is replayed with the
// command it logs.
//
//	go test ./coordinator -run TestChaos -chaos.seeds=100   # more seeds (or HOLDFAST_CHAOS_SEEDS=100)
//	go test ./coordinator -run TestChaos -chaos.seed=17 -v  # exactly one seed
var (
	chaosSeedsFlag = flag.Int("chaos.seeds", 0, "number of TestChaos seeds (default 8, 4 under -race, 2 with -short; env HOLDFAST_CHAOS_SEEDS)")
	chaosSeedFlag  = flag.Uint64("chaos.seed", 0, "run only this TestChaos seed")
	// chaosExclusive changes the workload, not the checks: with it, two
	// workers of one node never acquire the same name at once, so no
	// node ever holds two handles of one grant.
	chaosExclusive = flag.Bool("chaos.exclusive", false, "TestChaos workers of one node never acquire the same lease name at once")
)

const (
	chaosNodes       = 5
	chaosFaultTime   = 7 * time.Second // how long faults are injected per seed
	chaosOpTimeout   = 2 * time.Second // bound of every Acquire / Release of a worker
	chaosZombieWait  = 2 * time.Second // how long a zombie waits for a newer token to reach the register
	chaosZombieRatio = 0.4
)

var chaosNames = []string{"a", "b"}

// chaosParallel is how many seeds run at once (within -parallel): a seed's
// nodes mostly wait on timers and fault schedules, so four fit on a 2-core
// host; two under the race detector, which multiplies their CPU.
func chaosParallel() int {
	if chaosRace {
		return 2
	}
	return 4
}

func chaosSeeds(t *testing.T) []uint64 {
	if *chaosSeedFlag != 0 {
		return []uint64{*chaosSeedFlag}
	}
	n := chaosDefaultSeeds()
	if v := os.Getenv("HOLDFAST_CHAOS_SEEDS"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m <= 0 {
			t.Fatalf("HOLDFAST_CHAOS_SEEDS=%q: want a positive number", v)
		}
		n = m
	}
	if *chaosSeedsFlag > 0 {
		n = *chaosSeedsFlag
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// chaosReplay is the command that runs seed again. Seeds beyond the default
// count need -chaos.seed to exist at all.
func chaosReplay(seed uint64) string {
	cmd := fmt.Sprintf("go test ./coordinator -run 'TestChaos/seed=%d$' -v", seed)
	if seed > uint64(chaosDefaultSeeds()) {
		cmd += fmt.Sprintf(" -chaos.seed=%d", seed)
	}
	if *chaosExclusive {
		cmd += " -chaos.exclusive"
	}
	if *chaosShardSessionI3 {
		cmd += " -chaos.shard-session-i3"
	}
	return cmd
}

// chaosDefaultSeeds is how many seeds run without -chaos.seeds or
// HOLDFAST_CHAOS_SEEDS: 8 (enough for the shard zombie check, see
// chaosShardZombieMinSeeds), 4 under the race detector, 2 with -short. A
// seed costs about 10 s of wall time; a longer soak sets the variable.
func chaosDefaultSeeds() int {
	switch {
	case testing.Short():
		return 2
	case chaosRace:
		return 4
	}
	return chaosShardZombieMinSeeds
}

func TestChaos(t *testing.T) {
	seeds := chaosSeeds(t)
	sem := make(chan struct{}, chaosParallel())
	var total struct {
		sync.Mutex
		seeds, zombieRejected, lateFenced int
		shardLeases, shardZombieRejected  int
		shardSessionLosses                int
		recovered                         time.Duration // longest I6 recovery
	}
	t.Cleanup(func() {
		total.Lock()
		defer total.Unlock()
		t.Logf("all seeds: %d run, %d zombie writes rejected, %d late correct writes fenced; %d shard leases, %d shard zombie writes rejected, every shard owned at most %v after forming again; %d shard leases lost with their session on an unfaulted node (I3, enforced only with -chaos.shard-session-i3)",
			total.seeds, total.zombieRejected, total.lateFenced, total.shardLeases, total.shardZombieRejected,
			total.recovered.Round(time.Millisecond), total.shardSessionLosses)
		if total.seeds > 0 && !t.Failed() && total.zombieRejected == 0 {
			t.Errorf("I4: no zombie write was rejected in %d seeds: the run did not exercise fencing", total.seeds)
		}
		// Some seeds move no shard after a fault, so a few seeds may
		// reject no shard zombie write; the default counts should.
		if total.seeds >= chaosShardZombieMinSeeds && !t.Failed() && total.shardZombieRejected == 0 {
			t.Errorf("I4: no shard zombie write was rejected in %d seeds: the run did not exercise shard fencing", total.seeds)
		}
	})
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			st, sst := runChaosSeed(t, seed)
			total.Lock()
			total.seeds++
			total.zombieRejected += st.zombieRejected
			total.lateFenced += st.lateFenced
			total.shardLeases += sst.leases
			total.shardZombieRejected += sst.zombieRejected
			total.shardSessionLosses += len(sst.sessionLosses)
			total.recovered = max(total.recovered, sst.recovered)
			total.Unlock()
		})
	}
}

// chaosRun is the state of one seed.
type chaosRun struct {
	t    *testing.T
	seed uint64
	cl   *holdfasttest.Cluster
	h    *chaosHistory
	sh   *chaosShards
	req  *chaosRequests  // calls in flight and live leases per node and name
	mem  *fence.Memory   // the fenced registers of the leases and the shards
	ctx  context.Context // cancelled when the workers must stop
	stop context.CancelFunc
	// wg counts the workers, the shard writers and the zombies; stopMu
	// guards its Add against the Wait of stopWorkers.
	wg       sync.WaitGroup
	stopMu   sync.Mutex
	stopping bool
	// workers[i] is how many workers node i runs (1 or 2).
	workers []int
	// incarnation[i] counts starts of node i, to seed its workers.
	incarnation []int
	errors      atomic.Int64 // Acquire errors other than shutdown/timeouts, for the summary
	// busy[i][name] is held by the worker of node i using name (only with
	// -chaos.exclusive).
	busy [][]sync.Mutex
	// activated is the latest instant any node's lessor took over (I6
	// counts from it when it follows the formation).
	activated atomic.Pointer[time.Time]
	// replay is the command that runs the seed again (chaosReplay for
	// TestChaos; TestSimulation sets its own).
	replay func(seed uint64) string
	// inject, when set, injects the fault kinds drive does not know
	// (TestSimulation's).
	inject func(rng *rand.Rand, kind string, victim int)
}

func newChaosRun(t *testing.T, seed uint64) *chaosRun {
	ctx, stop := context.WithCancel(context.Background())
	r := &chaosRun{
		t: t, seed: seed, h: newChaosHistory(), sh: newChaosShards(), req: newChaosRequests(), mem: fence.NewMemory(fence.MemoryConfig{}), ctx: ctx, stop: stop,
		workers: make([]int, chaosNodes), incarnation: make([]int, chaosNodes), replay: chaosReplay,
	}
	r.busy = make([][]sync.Mutex, chaosNodes)
	for i := range r.busy {
		r.busy[i] = make([]sync.Mutex, len(chaosNames))
	}
	return r
}

// enter counts one more goroutine in wg, unless the run is stopping; the
// caller calls wg.Done when it returns true.
func (r *chaosRun) enter() bool {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stopping {
		return false
	}
	r.wg.Add(1)
	return true
}

// goTracked runs f on a goroutine counted in wg, unless the run is stopping.
func (r *chaosRun) goTracked(f func()) {
	if !r.enter() {
		return
	}
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// stopWorkers stops every worker, shard writer and zombie and waits for
// them; it may be called again.
func (r *chaosRun) stopWorkers() {
	r.stopMu.Lock()
	r.stopping = true
	r.stopMu.Unlock()
	r.stop()
	r.wg.Wait()
}

func runChaosSeed(t *testing.T, seed uint64) (chaosStats, chaosShardStats) {
	t.Logf("replay: %s", chaosReplay(seed))
	rng := rand.New(rand.NewPCG(seed, 0x686f6c6466617374)) // the fault driver's choices
	r := newChaosRun(t, seed)
	defer r.stopWorkers() // also on t.Fatal, before the cluster's Cleanup closes it
	r.cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: chaosNodes, Voters: 3, InMemory: true, Seed: int64(seed),
		Configure: r.configureNode})
	cl := r.cl
	cl.WaitFormed(formTimeout)
	cfg := cl.Node(0).Config
	settle := cfg.Session.TTL + cfg.Session.ExpiryGrace

	for i := range r.workers {
		r.workers[i] = 1 + rng.IntN(2)
		r.spawn(i, cl.Node(i).C())
	}

	r.drive(rng, time.Now().Add(chaosFaultTime), chaosFaultKinds)
	driven := time.Now()

	// Heal everything and let the cluster form again before checking.
	cl.Heal()
	cl.Net.SetDelay("", "", 0, 0)
	cl.Net.SetLoss(0)
	cl.WaitFormed(formTimeout)
	formed := time.Now()
	recovered, i6, orphans := r.recover(formed, driven, cfg.Session.TTL, settle)
	t.Logf("seed %d: faults for %v, formed again after %v, every shard owned %v later, workers stopped after %v",
		seed, driven.Sub(r.h.t0).Round(time.Millisecond), formed.Sub(driven).Round(time.Millisecond),
		recovered.Round(time.Millisecond), time.Since(formed.Add(recovered)).Round(time.Millisecond))

	now := time.Now()
	violations, st := r.h.check(now, settle)
	shardViolations, sst := r.checkShards(now, settle)
	sst.recovered = recovered
	violations = append(violations, shardViolations...)
	violations = append(violations, orphans...)
	r.req.mu.Lock()
	violations = append(violations, r.req.violations...)
	calls := fmt.Sprint(r.req.calls)
	r.req.mu.Unlock()
	t.Logf("seed %d requests: calls by bound %s", seed, calls)
	if i6 != "" {
		violations = append(violations, i6)
	}
	r.report(violations, st, sst)
	return st, sst
}

// recover runs the window after the faults, from formed (the cluster formed
// again) on: it waits for every shard to be owned (how long it took, and
// I6's violation if any), lets the workers run on for a TTL without faults
// while watching for an Acquire blocked behind its own session's grant
// (faults ended at driven), stops them, and returns the orphans found.
func (r *chaosRun) recover(formed, driven time.Time, ttl, settle time.Duration) (time.Duration, string, []string) {
	monCtx, stopMon := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		r.monitorBlocked(monCtx, driven, ttl)
	}()
	recovered, i6 := r.waitShardsOwned(formed)
	pace(context.Background(), max(ttl-time.Since(formed), 0))
	r.stopWorkers()
	stopMon()
	<-monDone
	return recovered, i6, r.checkNoOrphans(settle)
}

// report logs the seed's statistics and fails it on violations.
func (r *chaosRun) report(violations []string, st chaosStats, sst chaosShardStats) {
	t, seed, replay := r.t, r.seed, r.replay(r.seed)
	t.Logf("seed %d (t0 %s): %d grants (%d handles, causes %v); correct writes %d accepted, %d fenced late; zombie writes %d, %d rejected, %d skipped; acquire errors %d; workers/node %v; faults %d: %s",
		seed, r.h.t0.Format("15:04:05.000"), st.grants, st.handles, st.causes, st.writesAccepted, st.lateFenced,
		st.zombieWrites, st.zombieRejected, st.zombieSkipped, r.errors.Load(), r.workers,
		len(st.faults), strings.Join(st.faults, " "))
	t.Logf("seed %d shards: %d leases (causes %v); correct writes %d accepted, %d fenced late; zombie writes %d, %d rejected, %d skipped",
		seed, sst.leases, sst.causes, sst.writesAccepted, sst.lateFenced, sst.zombieWrites, sst.zombieRejected, sst.zombieSkipped)
	for _, l := range sst.sessionLosses {
		t.Logf("seed %d: not enforced without -chaos.shard-session-i3: %s", seed, l)
	}
	if len(violations) > 0 {
		const maxShown = 20
		shown := violations[:min(len(violations), maxShown)]
		t.Errorf("seed %d: %d invariant violations (first %d):\n  %s\nreplay: %s",
			seed, len(violations), len(shown), strings.Join(shown, "\n  "), replay)
	}
	if st.grants == 0 {
		t.Errorf("seed %d: no lease was ever granted\nreplay: %s", seed, replay)
	}
	if sst.leases < chaosShardCount {
		t.Errorf("seed %d: only %d shard leases were believed, fewer than the %d shards\nreplay: %s", seed, sst.leases, chaosShardCount, replay)
	}
}

// spawn starts node i's workers for the incarnation c.
func (r *chaosRun) spawn(i int, c *coordinator.Coordinator) {
	r.incarnation[i]++
	c.SetForwardDuplicator(r.duplicator(i))
	c.SetLessorHooks(r.noteActivation, nil)
	for k := range r.workers[i] {
		wrng := rand.New(rand.NewPCG(r.seed, uint64(i)<<32|uint64(r.incarnation[i])<<8|uint64(k)))
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.work(i, c, wrng)
		}()
	}
}

// pace waits d or until the run stops; it reports whether d passed. It
// paces the scenario (worker think time, fault durations); it is not used
// to wait for any event.
func pace(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// work is one worker on node i while incarnation c runs: it campaigns,
// holds and writes, releases, and now and then writes once more as a zombie.
func (r *chaosRun) work(i int, c *coordinator.Coordinator, rng *rand.Rand) {
	nodeName := r.cl.Node(i).Name
	for r.ctx.Err() == nil && r.cl.Node(i).C() == c {
		ni := rng.IntN(len(chaosNames))
		name := chaosNames[ni]
		if *chaosExclusive {
			if !r.busy[i][ni].TryLock() {
				if !pace(r.ctx, between(rng, 10*time.Millisecond, 50*time.Millisecond)) {
					return
				}
				continue
			}
		}
		if !r.acquireOne(i, c, nodeName, name, rng) {
			if *chaosExclusive {
				r.busy[i][ni].Unlock()
			}
			return
		}
		if *chaosExclusive {
			r.busy[i][ni].Unlock()
		}
		if !pace(r.ctx, between(rng, 0, 100*time.Millisecond)) {
			return
		}
	}
}

// acquireOne runs one Acquire, hold and (maybe) zombie write; it reports
// false when the worker must stop.
func (r *chaosRun) acquireOne(i int, c *coordinator.Coordinator, nodeName, name string, rng *rand.Rand) bool {
	opCtx, cancel, kind := callCtx(r.ctx, rng)
	try := rng.Float64() < 0.2
	if try {
		kind = "try-" + kind
	}
	done := r.req.begin(i, name, kind, !try)
	var l *coordinator.Lease
	var err error
	if try {
		l, err = c.TryAcquire(opCtx, name)
	} else {
		l, err = c.Acquire(opCtx, name)
	}
	cancel()
	if err == nil {
		r.req.hold(i, name, l)
	}
	done()
	if err != nil {
		if errors.Is(err, coordinator.ErrShutdown) {
			return false
		}
		if r.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
			!errors.Is(err, coordinator.ErrLeaseHeld) {
			r.errors.Add(1)
		}
		return pace(r.ctx, between(rng, 10*time.Millisecond, 50*time.Millisecond))
	}
	g := &chaosGrant{name: name, node: i, nodeName: nodeName, token: l.Token(), acquired: time.Now(), endedOnReturn: l.Err() != nil}
	if hd, ok := c.Holder(name); ok && hd.Token == l.Token() {
		g.session = hd.Session
	}
	r.h.addGrant(g)
	recorded := make(chan struct{})
	context.AfterFunc(l.Context(), func() {
		r.h.endGrant(g, time.Now(), l.Err())
		close(recorded)
	})
	r.hold(l, g, rng)
	<-recorded
	if rng.Float64() < chaosZombieRatio {
		r.zombie(l, g)
	}
	return true
}

// hold writes under l for a random time, each write after a passing
// Checkpoint, then releases; it returns when the lease ended.
func (r *chaosRun) hold(l *coordinator.Lease, g *chaosGrant, rng *rand.Rand) {
	holdFor := time.NewTimer(between(rng, 50*time.Millisecond, 800*time.Millisecond)) // scenario pacing
	defer holdFor.Stop()
	tick := time.NewTicker(between(rng, 20*time.Millisecond, 80*time.Millisecond)) // scenario pacing
	defer tick.Stop()
	release := func() {
		r.h.releasing(g, time.Now())
		ctx, cancel := releaseCtx(rng)
		defer cancel()
		_ = l.Release(ctx) // the local belief ends first whatever the outcome
	}
	write := func() bool {
		if err := l.Checkpoint(); err != nil {
			return false
		}
		r.write(l, g, false)
		return true
	}
	if !write() {
		release()
		return
	}
	for {
		select {
		case <-l.Done():
			return
		case <-r.ctx.Done():
			release()
			return
		case <-holdFor.C:
			release()
			return
		case <-tick.C:
			if !write() {
				release()
				return
			}
		}
	}
}

// write writes token to the lease's register and records the attempt.
func (r *chaosRun) write(l *coordinator.Lease, g *chaosGrant, zombie bool) {
	res := "resource-" + g.name
	err := r.mem.Do(res, g.token, func() error {
		r.h.acceptedWrite(res, g.token)
		return nil
	})
	w := chaosWrite{name: g.name, node: g.node, token: g.token, at: time.Now(), accepted: err == nil, zombie: zombie}
	if err != nil && !errors.Is(err, fence.ErrFenced) {
		r.t.Errorf("write %s token %d: unexpected error %v\nreplay: %s", res, g.token, err, r.replay(r.seed))
	}
	if err != nil && !zombie {
		w.heldAfter = l.Err() == nil
	}
	r.h.addWrite(w)
}

// zombie models a holder that was paused while holding and wakes up after
// its lease ended and a newer holder wrote: it writes once more with its
// old token, without checking. The register must reject it.
func (r *chaosRun) zombie(l *coordinator.Lease, g *chaosGrant) {
	res := "resource-" + g.name
	err := holdfasttest.Poll(chaosZombieWait, func() error {
		if r.ctx.Err() != nil || r.mem.Highest(res) > g.token {
			return nil
		}
		return holdfasttest.ErrNotYet
	})
	if err != nil || r.mem.Highest(res) <= g.token {
		r.h.skipZombie()
		return
	}
	r.write(l, g, true)
}

// chaosFaultKinds are the faults the driver picks from.
var chaosFaultKinds = []string{"kill", "pause-short", "pause-long", "isolate", "isolate-leader", "partition", "delay-loss",
	"fail-heal-fail", "slow-forwards"}

// drive injects one fault at a time until deadline: pick a fault of kinds,
// hold it for a while, undo it, wait 300–800 ms. The timers pace the
// scenario.
func (r *chaosRun) drive(rng *rand.Rand, deadline time.Time, kinds []string) {
	for time.Now().Before(deadline) {
		pace(context.Background(), between(rng, 300*time.Millisecond, 800*time.Millisecond))
		kind := kinds[rng.IntN(len(kinds))]
		victim := rng.IntN(chaosNodes)
		r.fault(rng, kind, victim)
	}
}

// fault injects one fault of kind (victim: the node it hits, when it hits
// one), holds it and undoes it.
func (r *chaosRun) fault(rng *rand.Rand, kind string, victim int) {
	cl, h := r.cl, r.h
	ttl := cl.Node(0).Config.Session.TTL
	switch kind {
	case "kill":
		f := h.addFault(kind, r.touchedBy(victim))
		cl.Kill(victim)
		pace(context.Background(), between(rng, 300*time.Millisecond, 2500*time.Millisecond))
		var c *coordinator.Coordinator
		err := holdfasttest.Poll(formTimeout, func() error {
			var err error
			c, err = cl.TryStart(victim)
			return err
		})
		if err != nil {
			r.t.Fatalf("restarting node%d: %v\nreplay: %s", victim, err, r.replay(r.seed))
		}
		h.healFault(f)
		r.spawn(victim, c)
	case "pause-short", "pause-long":
		d := between(rng, 300*time.Millisecond, ttl/2)
		if kind == "pause-long" {
			d = between(rng, ttl+200*time.Millisecond, ttl+1500*time.Millisecond)
		}
		f := h.addFault(kind, r.touchedBy(victim))
		cl.Pause(victim)
		pace(context.Background(), d)
		cl.Resume(victim)
		h.healFault(f)
	case "isolate", "isolate-leader":
		if kind == "isolate-leader" {
			if l, err := cl.Leader(); err == nil {
				victim = l.Index
			}
		}
		f := h.addFault(kind, r.touchedBy(victim))
		cl.Isolate(victim)
		pace(context.Background(), between(rng, 500*time.Millisecond, 4*time.Second))
		cl.Heal()
		h.healFault(f)
	case "partition":
		perm := rng.Perm(chaosNodes)
		minority := perm[:1+rng.IntN(2)]
		majority := perm[len(minority):]
		slices.Sort(minority)
		slices.Sort(majority)
		touched := slices.Clone(minority)
		if !r.quorumIn(majority) {
			touched = allNodes() // nobody keeps a quorum of voters
		}
		f := h.addFault(fmt.Sprintf("partition%v|%v", minority, majority), touched)
		cl.Partition(minority, majority)
		pace(context.Background(), between(rng, 500*time.Millisecond, 4*time.Second))
		cl.Heal()
		h.healFault(f)
	case "fail-heal-fail":
		r.failHealFail(rng)
	case "delay-loss":
		maxDelay := between(rng, time.Millisecond, 30*time.Millisecond)
		loss := 0.02 + 0.13*rng.Float64()
		f := h.addFault(fmt.Sprintf("delay-loss(%v,%.2f)", maxDelay, loss), allNodes())
		cl.Net.SetDelay("", "", 0, maxDelay)
		cl.Net.SetLoss(loss)
		pace(context.Background(), between(rng, 500*time.Millisecond, 3*time.Second))
		cl.Net.SetDelay("", "", 0, 0)
		cl.Net.SetLoss(0)
		pace(context.Background(), maxDelay) // what was sent delayed arrives (see slowForwards)
		h.healFault(f)
	case "slow-forwards":
		r.slowForwards(rng, victim)
	default:
		r.inject(rng, kind, victim)
	}
}

func allNodes() []int {
	out := make([]int, chaosNodes)
	for i := range out {
		out[i] = i
	}
	return out
}

// quorumIn reports whether nodes (those of them running) hold a majority
// of the voters of the raft configuration the leader knows; false when no
// leader is known. A voter is counted by its raft ID, so a wiped node that
// came back under a new identity does not count for its old one.
func (r *chaosRun) quorumIn(nodes []int) bool {
	l, err := r.cl.Leader()
	if err != nil {
		return false
	}
	voters := l.C().Voters()
	in := 0
	for _, i := range nodes {
		if c := r.cl.Node(i).C(); c != nil && slices.Contains(voters, c.ID()) {
			in++
		}
	}
	return len(voters) > 0 && in > len(voters)/2
}

// touchedBy is the nodes a fault on victims touches, for I3: the victims,
// or every node when the others do not hold a quorum of the voters without
// them (an earlier wiped voter not yet replaced, say), so that while the
// fault lasts no node has a leader to keep its session alive.
func (r *chaosRun) touchedBy(victims ...int) []int {
	var rest []int
	for i := range chaosNodes {
		if !slices.Contains(victims, i) {
			rest = append(rest, i)
		}
	}
	if !r.quorumIn(rest) {
		return allNodes()
	}
	return victims
}
