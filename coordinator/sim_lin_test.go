package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/internal/lincheck"
)

// The linearizability side of a TestSimulation seed: on every node one
// worker acquires and releases simLinName and one reader does Sync and then
// reads its holder, through every fault of the seed; the history is
// checked with porcupine against the one-holder lease model
// (internal/lincheck). The model's client is the session, not the node: a
// node's incarnations, and the sessions one incarnation opens after losing
// one, are different holders to the cluster (the second is queued behind
// the first), and a grant a holder saw end without a release (a lapsed
// session, a killed node) is recorded as lost.

const simLinName = "lin-a"

// simLinNodes is how many nodes (the first ones) run a worker and a
// reader: enough contention to matter, few enough concurrent operations
// with unknown outcomes for porcupine to decide every seed's history.
const simLinNodes = 3

// simLinCheckTimeout bounds porcupine on one seed's history.
const simLinCheckTimeout = 3 * time.Second

// linWork runs node i's worker until the run stops.
func (s *simRun) linWork(i int) {
	r := s.chaosRun
	rng := rand.New(rand.NewPCG(r.seed, 0x6c696e<<8|uint64(i)))
	worker := fmt.Sprintf("node%d", i)
	for r.ctx.Err() == nil {
		c := r.cl.Node(i).C()
		if c == nil {
			if !pace(r.ctx, 50*time.Millisecond) {
				return
			}
			continue
		}
		s.linOnce(c, worker, rng)
		if !pace(r.ctx, between(rng, 20*time.Millisecond, 200*time.Millisecond)) {
			return
		}
	}
}

// linOnce is one acquire and, when granted, a hold and a release.
func (s *simRun) linOnce(c *coordinator.Coordinator, worker string, rng *rand.Rand) {
	r := s.chaosRun
	wait := rng.IntN(10) < 4
	kind, acquire := lincheck.TryAcquire, c.TryAcquire
	if wait {
		kind, acquire = lincheck.Acquire, c.Acquire
	}
	client := c.SessionID()
	call := s.lin.Begin(worker, lincheck.Input{Kind: kind, Name: simLinName, Client: client})
	ctx, cancel := context.WithTimeout(r.ctx, between(rng, time.Second, 3*time.Second))
	l, err := acquire(ctx, simLinName)
	cancel()
	switch {
	case err == nil:
		// The grant's session: the node's session may have been replaced
		// while the call waited.
		if hd, ok := c.Holder(simLinName); ok && hd.Token == l.Token() {
			client = hd.Session
		} else {
			client = c.SessionID()
		}
		call.EndAs(client, lincheck.Output{Token: l.Token()})
	case errors.Is(err, coordinator.ErrLeaseHeld) && c.SessionID() == client:
		call.End(lincheck.Output{Refused: true})
		return
	default:
		call.Fail()
		s.lin.Settle(worker, call)
		return
	}
	pace(r.ctx, between(rng, 0, 200*time.Millisecond))
	if l.Err() != nil {
		s.lin.Lost(worker, simLinName, client, l.Token())
		return
	}
	rel := s.lin.Begin(worker, lincheck.Input{Kind: lincheck.Release, Name: simLinName, Client: client, Token: l.Token()})
	ctx, cancel = context.WithTimeout(context.Background(), between(rng, 300*time.Millisecond, 1500*time.Millisecond))
	err = l.Release(ctx)
	cancel()
	if err != nil {
		rel.Fail()
		if !errors.Is(err, coordinator.ErrReleased) {
			s.lin.Lost(worker, simLinName, client, l.Token())
		}
		return
	}
	rel.End(lincheck.Output{})
}

// linRead runs node i's reader until the run stops: Sync, then the holder.
func (s *simRun) linRead(i int) {
	r := s.chaosRun
	rng := rand.New(rand.NewPCG(r.seed, 0x726561<<8|uint64(i)))
	worker := fmt.Sprintf("node%d/reader", i)
	for pace(r.ctx, between(rng, 100*time.Millisecond, 400*time.Millisecond)) {
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
			hs = append(hs, lincheck.Holder{Client: h.Session, Token: h.Token})
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
	path, err := lincheck.Visualize(model, info, dir, fmt.Sprintf("sim-seed%d", s.seed))
	if err != nil {
		path = fmt.Sprintf("(not written: %v)", err)
	}
	if res == porcupine.Unknown {
		// Not a violation: a history the checker could not decide in
		// time (many operations of unknown outcome at once); counted.
		s.t.Logf("seed %d: I11 not decided within %v (%v); visualization: %s", s.seed, simLinCheckTimeout, st, path)
		return "", st
	}
	return fmt.Sprintf("I11: the history of %s is not linearizable (%v); visualization: %s\n%s",
		simLinName, st, path, lincheck.Explain(model, info, ops)), st
}
