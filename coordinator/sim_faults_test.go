package coordinator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/storetest"
)

// The faults TestSimulation adds to TestChaos's (see simFaultKinds): a
// one-way cut, a restart without the data dir, a clock rate change within
// the documented bound, and a suspend (the node's clock jumps past what
// its timers saw).

// simClock is a node's machine clock in the simulation: the bubble's
// virtual time, run at a rate (drift within Session.MaxClockDrift) and
// moved forward by suspend jumps. It is the node's Config.Clock, kept
// across its restarts as a machine's clock would be.
type simClock struct {
	mu    sync.Mutex
	base  time.Duration // the reading at since
	since time.Time
	rate  float64
}

func newSimClock(rate float64) *simClock {
	return &simClock{since: time.Now(), rate: rate}
}

// Now implements coordinator.Clock.
func (c *simClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *simClock) nowLocked() time.Duration {
	return c.base + time.Duration(float64(time.Since(c.since))*c.rate)
}

// setRate makes the clock run at rate from now on.
func (c *simClock) setRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base, c.since, c.rate = c.nowLocked(), time.Now(), rate
}

// jump moves the clock forward by d at once, as a resume from suspend
// shows it to a node whose timers did not run meanwhile.
func (c *simClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base += d
}

// simFaultKinds are the faults TestSimulation's nemesis picks from:
// TestChaos's and the ones simFault injects.
var simFaultKinds = append([]string{"one-way", "kill-wipe", "clock-rate", "suspend", "power-loss", "fsync-fail"}, chaosFaultKinds...)

// simDriftRate draws a clock rate within the drift bound.
func simDriftRate(rng *rand.Rand, drift float64) float64 {
	return 1 + drift*(2*rng.Float64()-1)
}

// simFault injects one of the faults TestChaos does not have.
func (s *simRun) simFault(rng *rand.Rand, kind string, victim int) {
	r := s.chaosRun
	cl, h := r.cl, r.h
	ttl := cl.Node(0).Config.Session.TTL
	switch kind {
	case "one-way":
		other := (victim + 1 + rng.IntN(chaosNodes-1)) % chaosNodes
		f := h.addFault(fmt.Sprintf("one-way(%d->%d)", victim, other), []int{victim, other})
		cl.Net.DropOneWay(fmt.Sprintf("n%d", victim), fmt.Sprintf("n%d", other))
		pace(context.Background(), between(rng, 300*time.Millisecond, 3*time.Second))
		cl.Heal()
		h.healFault(f)
	case "kill-wipe":
		wipe := !s.wipeLosesQuorum(victim)
		if !wipe {
			// A second voter lost for good while the first is not yet
			// replaced is two voters of three down at once: a lost quorum,
			// which only an operator's recovery mends (TestRecoverLostQuorum),
			// outside what the cluster promises to heal by itself (I8).
			kind = "kill-wipe(kept: an earlier wiped voter not yet replaced)"
		}
		f := h.addFault(kind, r.touchedBy(victim))
		cl.Kill(victim)
		if wipe {
			cl.Wipe(victim)
			s.disks[victim].set(storetest.NewMemFS(0))
		}
		pace(context.Background(), between(rng, 300*time.Millisecond, 2500*time.Millisecond))
		s.restart(victim)
		h.healFault(f)
	case "clock-rate":
		rate := simDriftRate(rng, s.drift)
		s.tr.event("clock node%d rate %.5f", victim, rate)
		s.clocks[victim].setRate(rate)
	case "suspend":
		// The node stops (no traffic) and, when it resumes, its clock has
		// moved on by more than its timers saw, as a suspend-counting
		// clock shows a resumed holder: its beliefs must end at once. Only
		// a node that does not lead is jumped: one node's clock jumping
		// ahead of the others' is outside the clock assumption for a
		// leader's lessor (it would expire every session early), and
		// inside it for a holder (its belief only ends sooner).
		jump := between(rng, ttl/2, 2*ttl)
		f := h.addFault(fmt.Sprintf("suspend(%v)", jump.Round(time.Millisecond)), r.touchedBy(victim))
		cl.Pause(victim)
		pace(context.Background(), between(rng, 100*time.Millisecond, time.Second))
		if c := cl.Node(victim).C(); c != nil && c.RaftState() != coordinator.StateLeader {
			s.clocks[victim].jump(jump)
		} else {
			r.h.note("suspend of node%d: no jump (it leads)", victim)
		}
		cl.Resume(victim)
		h.healFault(f)
	case "power-loss", "fsync-fail":
		s.simDiskFault(rng, kind, victim)
	default:
		r.t.Fatalf("unknown fault kind %q", kind)
	}
}

// wipeLosesQuorum reports whether wiping node victim's data dir could
// lose the voters' majority for good: victim is a voter in some running
// node's raft configuration while a configuration also holds a voter whose
// identity no running node has (an earlier wipe not yet replaced).
func (s *simRun) wipeLosesQuorum(victim int) bool {
	cl := s.cl
	running := map[string]bool{}
	for i := range chaosNodes {
		if c := cl.Node(i).C(); c != nil {
			running[c.ID()] = true
		}
	}
	vc := cl.Node(victim).C()
	victimVoter, lost := vc == nil, false
	for i := range chaosNodes {
		c := cl.Node(i).C()
		if c == nil {
			continue
		}
		for _, id := range c.RaftVoters() {
			lost = lost || !running[id]
			victimVoter = victimVoter || (vc != nil && id == vc.ID())
		}
	}
	return victimVoter && lost
}

// restart starts node victim again (after a kill) and its workers.
func (s *simRun) restart(victim int) {
	r := s.chaosRun
	var c *coordinator.Coordinator
	err := holdfasttest.Poll(formTimeout, func() error {
		var err error
		c, err = r.cl.TryStart(victim)
		return err
	})
	if err != nil {
		r.t.Fatalf("restarting node%d: %v\nreplay: %s", victim, err, r.replay(r.seed))
	}
	r.spawn(victim, c)
}
