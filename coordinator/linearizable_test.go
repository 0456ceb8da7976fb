package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/lincheck"
)

// The linearizability check (internal/lincheck): three nodes on the
// in-memory network, workers per node and name acquiring and releasing
// (two per lease name, so that a release hands the name to the node's
// other worker when it waits), a reader per node doing Sync then reading
// the holders, while the raft leader or a follower is cut off for less
// than a second every one to two seconds (cuts far shorter than the
// session TTL). The history is checked
// with porcupine against a one-holder lease model and an N-permit
// semaphore model.
//
// HOLDFAST_LIN_SEEDS=N runs N seeds (default 1), HOLDFAST_LIN_SEED=S one
// chosen seed, HOLDFAST_LIN_DURATION=D each for D (default 8s, 4s with
// -short); HOLDFAST_LIN_OUT=DIR keeps the visualization of a rejected
// history.

// linRun describes one seed's run: the cluster, the recorder, and the
// operations one worker performs (acquire, then release what it got).
type linRun struct {
	t     *testing.T
	cl    *holdfasttest.Cluster
	rec   *lincheck.Recorder
	seed  int64
	names []string
	// grab asks for name on c (wait: Acquire, else TryAcquire) and returns
	// the grant; refused tells whether an error means the name was full.
	grab    func(ctx context.Context, c *coordinator.Coordinator, name string, wait bool) (grant, error)
	refused func(err error) bool
	read    func(c *coordinator.Coordinator, name string) []lincheck.Holder
	workers int // per node and name
}

// grant is what a worker holds.
type grant struct {
	token   uint64
	ctx     context.Context // ends with the holder's belief in the grant
	release func(ctx context.Context) error
}

func TestLeaseHistoryLinearizable(t *testing.T) {
	t.Parallel()
	forLinSeeds(t, func(t *testing.T, seed int64) {
		r := &linRun{t: t, seed: seed, names: []string{"lin-a", "lin-b"}, workers: 2,
			grab: func(ctx context.Context, c *coordinator.Coordinator, name string, wait bool) (grant, error) {
				acquire := c.TryAcquire
				if wait {
					acquire = c.Acquire
				}
				l, err := acquire(ctx, name)
				if err != nil {
					return grant{}, err
				}
				return grant{token: l.Token(), ctx: l.Context(), release: l.Release}, nil
			},
			refused: func(err error) bool { return errors.Is(err, coordinator.ErrLeaseHeld) },
			read: func(c *coordinator.Coordinator, name string) []lincheck.Holder {
				if h, ok := c.Holder(name); ok {
					return []lincheck.Holder{{Client: h.Node.Name, Token: h.Token}}
				}
				return nil
			},
		}
		ops := r.run()
		lincheck.Verify(t, "lease", lincheck.LeaseModel(), ops.Finish(lincheck.LeaseBounds), 2*time.Minute, seed)
	})
}

func TestSemaphoreHistoryLinearizable(t *testing.T) {
	t.Parallel()
	const limit = 2
	forLinSeeds(t, func(t *testing.T, seed int64) {
		r := &linRun{t: t, seed: seed, names: []string{"lin-s"}, workers: 2,
			grab: func(ctx context.Context, c *coordinator.Coordinator, name string, wait bool) (grant, error) {
				acquire := c.TryAcquireSemaphore
				if wait {
					acquire = c.AcquireSemaphore
				}
				p, err := acquire(ctx, name, limit)
				if err != nil {
					return grant{}, err
				}
				return grant{token: p.Token(), ctx: p.Context(), release: p.Release}, nil
			},
			refused: func(err error) bool { return errors.Is(err, coordinator.ErrSemaphoreFull) },
			read: func(c *coordinator.Coordinator, name string) []lincheck.Holder {
				var hs []lincheck.Holder
				for _, h := range c.SemaphoreHolders(name) {
					hs = append(hs, lincheck.Holder{Client: h.Node.Name, Token: h.Token})
				}
				return hs
			},
		}
		ops := r.run()
		lincheck.Verify(t, "semaphore", lincheck.SemaphoreModel(limit), ops.Finish(lincheck.SemaphoreBounds), 2*time.Minute, seed)
	})
}

// forLinSeeds runs f for each seed the environment asks for, one after
// the other.
func forLinSeeds(t *testing.T, f func(t *testing.T, seed int64)) {
	seeds := []int64{time.Now().UnixNano() % 1_000_000}
	if s := os.Getenv("HOLDFAST_LIN_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("HOLDFAST_LIN_SEED: %v", err)
		}
		seeds = []int64{v}
	} else if s := os.Getenv("HOLDFAST_LIN_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("HOLDFAST_LIN_SEEDS=%q: want a positive count", s)
		}
		for i := 1; i < n; i++ {
			seeds = append(seeds, seeds[0]+int64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay: HOLDFAST_LIN_SEED=%d go test ./coordinator -run '%s'", seed, t.Name())
			f(t, seed)
		})
	}
}

// linDuration is how long each seed's workload runs.
func linDuration(t *testing.T) time.Duration {
	if s := os.Getenv("HOLDFAST_LIN_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("HOLDFAST_LIN_DURATION: %v", err)
		}
		return d
	}
	if testing.Short() {
		return 4 * time.Second
	}
	return 8 * time.Second
}

// run starts the cluster, runs the workers, the readers and the cuts for
// linDuration, and returns the recorder.
func (r *linRun) run() *lincheck.Recorder {
	t := r.t
	r.cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Seed: r.seed})
	r.cl.WaitFormed(formTimeout)
	waitSessions(t, r.cl)
	r.rec = lincheck.NewRecorder(nil)
	sessions := map[string]string{}
	for _, n := range r.cl.Running() {
		sessions[n.Name] = n.C().SessionID()
		n.C().SetSettleHook(probeSettlement)
	}
	ctx, stop := context.WithTimeout(context.Background(), linDuration(t))
	defer stop()
	var wg sync.WaitGroup
	for i, n := range r.cl.Running() {
		for j, name := range r.names {
			for k := range r.workers {
				seed := r.seed*1000 + int64(100*i+10*j+k)
				wg.Go(func() { r.work(ctx, n, name, fmt.Sprintf("%s/%s/%d", n.Name, name, k), seed) })
			}
		}
		wg.Go(func() { r.reads(ctx, n) })
	}
	cuts := r.cut(ctx)
	wg.Wait()
	r.cl.Heal()
	lost := 0
	for _, n := range r.cl.Running() {
		if n.C().SessionID() != sessions[n.Name] {
			lost++
		}
	}
	leaders := 0
	for _, c := range cuts {
		if strings.HasPrefix(c, "leader") {
			leaders++
		}
	}
	t.Logf("seed %d: %d cuts, %d of the leader and %d of a follower (%s); %d sessions replaced",
		r.seed, len(cuts), leaders, len(cuts)-leaders, strings.Join(cuts, ", "), lost)
	return r.rec
}

// work acquires and releases name on n until ctx ends, recording each
// call.
func (r *linRun) work(ctx context.Context, n *holdfasttest.Node, name, worker string, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	c := n.C()
	for ctx.Err() == nil {
		kind := lincheck.TryAcquire
		if rng.IntN(10) < 7 {
			kind = lincheck.Acquire
		}
		g, ok := r.acquire(c, n.Name, name, worker, kind, rng)
		if !ok {
			continue
		}
		// A grant that ends without a release is lost the moment its
		// holder's belief ends (the cluster may grant the name again soon
		// after), not when the worker looks.
		context.AfterFunc(g.ctx, func() {
			if !errors.Is(context.Cause(g.ctx), coordinator.ErrReleased) {
				r.rec.Lost(worker, name, n.Name, g.token)
			}
		})
		pauseFor(ctx, time.Duration(rng.IntN(20))*time.Millisecond)
		if g.ctx.Err() != nil {
			continue
		}
		rel := r.rec.Begin(worker, lincheck.Input{Kind: lincheck.Release, Name: name, Client: n.Name, Token: g.token})
		probe := &settleProbe{rec: r.rec}
		rctx, cancel := context.WithTimeout(context.WithValue(context.Background(), settleProbeKey{}, probe),
			time.Duration(500+rng.IntN(1000))*time.Millisecond)
		err := g.release(rctx)
		cancel()
		if err != nil {
			rel.Fail()
			probe.attach(func(at int64) { r.rec.ReleasedBy(rel, at) })
			continue
		}
		rel.End(lincheck.Output{})
	}
}

// acquire asks for name on c (node client) with kind, recording the call,
// and returns the grant if there is one. A failed call's settlement is
// recorded, closed when the node's settle hook sees it commit (settleProbe).
// If the node's session was replaced while the call ran, the old session
// may have been granted the request first (and kept it until it ended):
// that is recorded as well (Recorder.Replaced), and the failed call's
// settlement is then neither bounded by the commit nor later than the call.
func (r *linRun) acquire(c *coordinator.Coordinator, client, name, worker string, kind lincheck.Kind, rng *rand.Rand) (grant, bool) {
	call := r.rec.Begin(worker, lincheck.Input{Kind: kind, Name: name, Client: client, Worker: worker})
	session := c.SessionID()
	probe := &settleProbe{rec: r.rec}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), settleProbeKey{}, probe),
		time.Duration(500+rng.IntN(1000))*time.Millisecond)
	g, err := r.grab(ctx, c, name, kind == lincheck.Acquire)
	cancel()
	replaced := c.SessionID() != session
	switch {
	case err == nil:
		call.End(lincheck.Output{Token: g.token})
	case r.refused(err):
		// Refused "by this node": another local worker holds or waits.
		call.End(lincheck.Output{Refused: true, Local: strings.Contains(err.Error(), "by this node")})
	case replaced || session == "":
		// Its requests may have had more than one session: the last one's
		// settlement does not end them all.
		call.Fail()
		r.rec.SettleSince(worker, call, 0)
	default:
		call.Fail()
		settle := r.rec.Settle(worker, call)
		probe.attach(func(at int64) { r.rec.Settled(settle, at) })
	}
	if replaced {
		r.t.Logf("%s: session replaced during the call (%.8s → %.8s)", worker, session, c.SessionID())
		r.rec.Replaced(worker, call)
	}
	return g, err == nil
}

// reads calls Sync on n and then reads every name's holders, until ctx
// ends; a read whose Sync failed is left out.
func (r *linRun) reads(ctx context.Context, n *holdfasttest.Node) {
	c := n.C()
	worker := n.Name + "/reader"
	rng := rand.New(rand.NewPCG(uint64(r.seed), uint64(3+n.Index)))
	for ctx.Err() == nil {
		calls := make([]*lincheck.Call, len(r.names))
		for i, name := range r.names {
			calls[i] = r.rec.Begin(worker, lincheck.Input{Kind: lincheck.Read, Name: name})
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Sync(sctx)
		cancel()
		for i, name := range r.names {
			if err != nil {
				calls[i].Discard()
				continue
			}
			calls[i].End(lincheck.Output{Holders: r.read(c, name)})
		}
		pauseFor(ctx, time.Duration(1+rng.IntN(3))*time.Millisecond) // keep the history checkable
	}
}

// cut isolates the raft leader or a follower (seeded choice) for 200 to
// 800 ms every 1 to 2 s until ctx ends, and returns what it cut.
func (r *linRun) cut(ctx context.Context) []string {
	rng := rand.New(rand.NewPCG(uint64(r.seed), 2))
	var cuts []string
	for {
		if !pauseFor(ctx, time.Duration(1000+rng.IntN(1000))*time.Millisecond) {
			return cuts
		}
		leader, err := r.cl.Leader()
		if err != nil {
			continue
		}
		target, what := leader, "leader"
		if rng.IntN(2) == 0 {
			target, what = follower(r.cl, leader), "follower"
		}
		d := time.Duration(200+rng.IntN(600)) * time.Millisecond
		r.cl.Isolate(target.Index)
		pauseFor(ctx, d)
		r.cl.Heal()
		cuts = append(cuts, fmt.Sprintf("%s %s %v", what, target.Name, d))
	}
}

// pauseFor waits d or until ctx ends; it reports whether d passed.
func pauseFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// settleProbe follows the settlement of one call (a failed acquire, or a
// failed release that goes on in the background): the node's settle hook
// finds it in the call's context and reports when the settlement
// committed, and the worker attaches what closes the history's operations
// at that moment (lincheck.Recorder.Settled or ReleasedBy); whichever comes
// second closes them.
type settleProbe struct {
	rec *lincheck.Recorder

	mu        sync.Mutex
	close     func(at int64) // nil until the worker attaches it
	at        int64
	committed bool
}

type settleProbeKey struct{}

// probeSettlement is the nodes' settle hook: it reports the commit of a
// settlement whose call carried a probe.
func probeSettlement(ctx context.Context, _ string, _ uint64) func(bool) {
	p, _ := ctx.Value(settleProbeKey{}).(*settleProbe)
	if p == nil {
		return nil
	}
	return func(committed bool) {
		if committed {
			p.committedAt(p.rec.Now())
		}
	}
}

func (p *settleProbe) committedAt(at int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at, p.committed = at, true
	if p.close != nil {
		p.close(at)
	}
}

func (p *settleProbe) attach(close func(at int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.close = close
	if p.committed {
		close(p.at)
	}
}
