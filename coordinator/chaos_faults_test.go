package coordinator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// failHealFail cuts one voter off past DeadServerStabilization, heals it,
// and cuts another voter off inside the window in which the healed one is
// being re-admitted (gossip still reports it failed, raft may not have
// caught it up): the sequence that used to leave a 3-voter group with two
// voters, one of them cut off.
func (r *chaosRun) failHealFail(rng *rand.Rand) {
	cl, h := r.cl, r.h
	voters := r.voterIndexes()
	if len(voters) < 2 {
		return
	}
	rng.Shuffle(len(voters), func(i, j int) { voters[i], voters[j] = voters[j], voters[i] })
	first, second := voters[0], voters[1]
	dss := cl.Node(0).Config.Cluster.DeadServerStabilization
	f := h.addFault(fmt.Sprintf("fail-heal-fail(%d,%d)", first, second), []int{first, second})
	cl.Isolate(first)
	pace(context.Background(), between(rng, dss, dss+2*time.Second))
	cl.Heal()
	pace(context.Background(), between(rng, 50*time.Millisecond, time.Second))
	cl.Isolate(second)
	pace(context.Background(), between(rng, 500*time.Millisecond, 3*time.Second))
	cl.Heal()
	h.healFault(f)
}

// voterIndexes returns the indexes of the nodes the leader lists as
// voters (none when no leader is known).
func (r *chaosRun) voterIndexes() []int {
	l, err := r.cl.Leader()
	if err != nil {
		return nil
	}
	var out []int
	for _, m := range l.C().Members() {
		if m.Suffrage != coordinator.SuffrageVoter {
			continue
		}
		for _, n := range r.cl.Nodes() {
			if n.Name == m.Name {
				out = append(out, n.Index)
			}
		}
	}
	return out
}
