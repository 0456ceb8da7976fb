package coordinator_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/internal/lincheck"
)

// The linearizability side of a TestSimulation seed: on the first
// simLinNodes nodes one worker acquires and releases simLinName and one
// reader does Sync and then reads its holder, through every fault of the
// seed; the history is checked with porcupine against the one-holder lease
// model (internal/lincheck). The model's client is the node, as in
// TestLeaseHistoryLinearizable, which bounds an operation of unknown
// outcome by the node's next one. A node's later session is a different
// holder to the cluster, though: a TryAcquire of its new session is
// refused while its old one still holds, which the model (one client,
// one holder) cannot explain. So after a node lost a grant or a call
// failed, its worker only calls Acquire, which waits, until the old
// session must be gone (simLinQuiet).

const simLinName = "lin-a"

// simLinNodes is how many nodes (the first ones) run a worker and a
// reader: enough contention to matter, few enough concurrent operations
// with unknown outcomes for porcupine to decide every seed's history.
const simLinNodes = 3

// simLinReaders is how many nodes (the first ones) run a reader: reads
// (a Sync each) are half of the simulation's cost per seed otherwise.
const simLinReaders = 2

// simLinStrict makes a rejected lease history fail its seed (the default;
// -sim.lin-strict=false only reports it, to look at other failures first).
var simLinStrict = flag.Bool("sim.lin-strict", true, "TestSimulation: a lease history porcupine rejects fails the seed (false: reported and counted)")

// simLinCheckTimeout bounds porcupine on one seed's history.
const simLinCheckTimeout = 3 * time.Second

// simLinQuiet is how long after a lost grant or a failed call a worker
// calls no TryAcquire: a session TTL and the expiry grace, and a margin.
func simLinQuiet(cfg coordinator.Config) time.Duration {
	return cfg.Session.TTL + cfg.Session.ExpiryGrace + time.Second
}

// linWork runs node i's worker until the run stops.
func (s *simRun) linWork(i int) {
	r := s.chaosRun
	rng := rand.New(rand.NewPCG(r.seed, 0x6c696e<<8|uint64(i)))
	w := &simLinWorker{name: fmt.Sprintf("node%d", i), quiet: simLinQuiet(r.cl.Node(i).Config)}
	var last *coordinator.Coordinator
	for r.ctx.Err() == nil {
		c := r.cl.Node(i).C()
		if c == nil {
			if !pace(r.ctx, 50*time.Millisecond) {
				return
			}
			continue
		}
		if c != last {
			w.hush() // a new incarnation: its old session may still hold
			last = c
			c.SetSettleHook(probeSettlement)
		}
		s.linOnce(c, w, rng)
		if !pace(r.ctx, between(rng, 20*time.Millisecond, 200*time.Millisecond)) {
			return
		}
	}
}

// simLinWorker is one lin worker's state.
type simLinWorker struct {
	name       string // the worker, and the model's client: the node
	quiet      time.Duration
	quietUntil time.Time // no TryAcquire before
}

func (w *simLinWorker) hush() { w.quietUntil = time.Now().Add(w.quiet) }

// linOnce is one acquire and, when granted, a hold and a release.
func (s *simRun) linOnce(c *coordinator.Coordinator, w *simLinWorker, rng *rand.Rand) {
	r := s.chaosRun
	wait := rng.IntN(10) < 4 || time.Now().Before(w.quietUntil)
	kind, acquire := lincheck.TryAcquire, c.TryAcquire
	if wait {
		kind, acquire = lincheck.Acquire, c.Acquire
	}
	call := s.lin.Begin(w.name, lincheck.Input{Kind: kind, Name: simLinName, Client: w.name})
	session := c.SessionID()
	probe := &settleProbe{rec: s.lin}
	ctx, cancel := context.WithTimeout(context.WithValue(r.ctx, settleProbeKey{}, probe), between(rng, time.Second, 3*time.Second))
	l, err := acquire(ctx, simLinName)
	cancel()
	s.tr.event("lin %s %v %s: token %d err %v", w.name, kind, simLinName, simToken(l, err), err)
	switch {
	case err == nil:
		call.End(lincheck.Output{Token: l.Token()})
		if now := c.SessionID(); now != session {
			// The node's session was replaced while the call waited: the
			// request may have been granted to the old one first.
			s.tr.event("lin %s session replaced during the call (%.8s → %.8s)", w.name, session, now)
			s.lin.Replaced(w.name, call)
		}
	case errors.Is(err, coordinator.ErrLeaseHeld):
		call.End(lincheck.Output{Refused: true})
		if now := c.SessionID(); now != session {
			// As above: the old session may have been granted the request
			// before the new one was refused (seed 23147).
			s.tr.event("lin %s session replaced during the refused call (%.8s → %.8s)", w.name, session, now)
			s.lin.Replaced(w.name, call)
		}
		return
	default:
		call.Fail()
		// What the failed call may have been granted ends at some time
		// after its call: released by the node once it gave up, or with
		// the node's session, which may lapse (a partitioned node) before
		// the call returns.
		settle := s.lin.SettleSince(w.name, call, 0)
		if now := c.SessionID(); now == session {
			// One session throughout (or none, now as before): once the
			// node sees the settlement of its last request commit, the
			// call can take no effect after that.
			if session != "" {
				probe.attach(func(at int64) { s.lin.Settled(settle, at) })
			}
		} else {
			// As above: the old session may have been granted the request,
			// and the new one too once it was asked again for it (seed
			// 78661: one failed call, two grants seen by readers).
			s.tr.event("lin %s session replaced during the failed call (%.8s → %.8s)", w.name, session, now)
			s.lin.Replaced(w.name, call)
		}
		w.hush()
		return
	}
	s.linHold(l, w, rng)
}

// linHold holds l for a while and releases it, recording the release (and
// the grant's loss if it ends otherwise).
func (s *simRun) linHold(l *coordinator.Lease, w *simLinWorker, rng *rand.Rand) {
	r := s.chaosRun
	// A grant that ends without a release is lost the moment its holder's
	// belief ends (the cluster may grant it again just after), not when the
	// worker looks.
	context.AfterFunc(l.Context(), func() {
		s.tr.event("lin %s end %s token %d: %v", w.name, simLinName, l.Token(), l.Err())
		if !errors.Is(l.Err(), coordinator.ErrReleased) {
			s.lin.Lost(w.name, simLinName, w.name, l.Token())
		}
	})
	pace(r.ctx, between(rng, 0, 200*time.Millisecond))
	if l.Err() != nil {
		w.hush()
		return
	}
	rel := s.lin.Begin(w.name, lincheck.Input{Kind: lincheck.Release, Name: simLinName, Client: w.name, Token: l.Token()})
	probe := &settleProbe{rec: s.lin}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), settleProbeKey{}, probe),
		between(rng, 300*time.Millisecond, 1500*time.Millisecond))
	s.tr.event("lin %s release %s token %d", w.name, simLinName, l.Token())
	err := l.Release(ctx)
	cancel()
	s.tr.event("lin %s released %s token %d: %v", w.name, simLinName, l.Token(), err)
	if err != nil {
		rel.Fail()
		probe.attach(func(at int64) { s.lin.ReleasedBy(rel, at) })
		w.hush()
		return
	}
	rel.End(lincheck.Output{})
}

// linRead runs node i's reader until the run stops: Sync, then the holder.
func (s *simRun) linRead(i int) {
	r := s.chaosRun
	rng := rand.New(rand.NewPCG(r.seed, 0x726561<<8|uint64(i)))
	worker := fmt.Sprintf("node%d/reader", i)
	for pace(r.ctx, between(rng, 200*time.Millisecond, 600*time.Millisecond)) {
		c := r.cl.Node(i).C()
		if c == nil {
			continue
		}
		call := s.lin.Begin(worker, lincheck.Input{Kind: lincheck.Read, Name: simLinName})
		ctx, cancel := context.WithTimeout(r.ctx, time.Second)
		err := c.Sync(ctx)
		cancel()
		if err != nil {
			call.Discard()
			continue
		}
		var hs []lincheck.Holder
		if h, ok := c.Holder(simLinName); ok {
			hs = append(hs, lincheck.Holder{Client: h.Node.Name, Token: h.Token})
		}
		call.End(lincheck.Output{Holders: hs})
	}
}

// linCheck checks the seed's history; on a rejection it writes porcupine's
// visualization to dir and returns the violation.
func (s *simRun) linCheck(dir string) (string, lincheck.Stats) {
	ops := s.lin.Finish(lincheck.LeaseBounds)
	st := lincheck.Count(ops)
	model := lincheck.LeaseModel()
	res, info := lincheck.Check(model, ops, simLinCheckTimeout)
	if res == porcupine.Ok {
		return "", st
	}
	path, hist := lincheck.Keep(model, info, ops, dir, fmt.Sprintf("sim-seed%d", s.seed))
	if res == porcupine.Unknown {
		// Not a violation: a history the checker could not decide in
		// time (many operations of unknown outcome at once); counted.
		s.t.Logf("seed %d: I11 not decided within %v (%v); visualization: %s; history: %s", s.seed, simLinCheckTimeout, st, path, hist)
		return "", st
	}
	msg := fmt.Sprintf("I11: the history of %s is not linearizable (%v); visualization: %s; history: %s\n%s",
		simLinName, st, path, hist, lincheck.Explain(model, info, ops))
	if !*simLinStrict {
		s.t.Logf("seed %d: %s", s.seed, msg)
		s.linRejected = true
		return "", st
	}
	return msg, st
}

// simToken is l's token, 0 without a lease.
func simToken(l *coordinator.Lease, err error) uint64 {
	if err != nil || l == nil {
		return 0
	}
	return l.Token()
}
