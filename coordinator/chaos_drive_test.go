package coordinator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// The fault driver of TestChaos: the faults it picks from, how each is
// injected, held and undone, and which nodes a fault touches (for I3). The
// compound faults are in chaos_faults_test.go.

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
