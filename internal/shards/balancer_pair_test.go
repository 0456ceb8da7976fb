package shards

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestExchangeBothHalvesOrNeither: by load, three sessions where a holds
// every cold shard (24 of load 1) and b and c four hot ones each (load 8)
// are stuck for single moves; the planner exchanges a hot shard for a cold
// one (shardown's Move.Pair). With room for one handoff the round starts
// neither half; with room for two it starts both, between the same two
// sessions in opposite directions.
func TestExchangeBothHalvesOrNeither(t *testing.T) {
	for _, maxMoves := range []int{1, 2} {
		rig, load := stuckByLoad(t, BalancerOptions{MaxMoves: maxMoves})
		rig.round(0, true)
		rig.round(time.Millisecond, false)
		rev := revokingShards(rig.view())
		if maxMoves == 1 {
			if len(rev) != 0 {
				t.Fatalf("MaxMoves 1: %v revoking (%s), want none: half an exchange", rev, describe(rig.view()))
			}
			continue
		}
		if len(rev) != 2 {
			t.Fatalf("MaxMoves 2: %v revoking (%s), want an exchange of two", rev, describe(rig.view()))
		}
		var pairs []string
		for _, s := range rev {
			sh, _ := rig.view().Shard(s)
			pairs = append(pairs, sh.Owner+">"+sh.To)
		}
		slices.Sort(pairs)
		hot, _ := rig.view().Shard(rev[0])
		if load[rev[0]] != 8 || load[rev[1]] != 1 || pairs[0] != "a>"+hot.Owner || pairs[1] != hot.Owner+">a" {
			t.Fatalf("MaxMoves 2: revoking %v as %v, want a hot shard of b or c to a and a cold one of a back", rev, pairs)
		}
	}
}

// targetAnswers answers each target's prepare calls from the target's own
// channel, so that a test decides which target is ready first.
type targetAnswers struct {
	mu    sync.Mutex
	asked map[string]int
	ready map[string]chan error
}

func newTargetAnswers(targets ...string) *targetAnswers {
	a := &targetAnswers{asked: map[string]int{}, ready: map[string]chan error{}}
	for _, t := range targets {
		a.ready[t] = make(chan error, 10)
	}
	return a
}

func (a *targetAnswers) prepare(ctx context.Context, to string, _ []fsm.ShardItem, _ time.Duration) error {
	a.mu.Lock()
	a.asked[to]++
	ch := a.ready[to]
	a.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *targetAnswers) askedOf(to string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[to]
}

// TestPreparedExchangeRevokedTogether: with a prepare phase, the two
// halves of an exchange are revoked in the same round. The round after the
// first half's target (a) answered revokes nothing while the other half's
// target still prepares; the round after it answered too revokes both.
// Without holdHalves the first half is revoked alone.
func TestPreparedExchangeRevokedTogether(t *testing.T) {
	answers := newTargetAnswers("a", "b", "c")
	rig, load := stuckByLoad(t, BalancerOptions{MaxMoves: 2, Prepare: answers.prepare, PrepareTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		rig.b.stopPrepares()
	})
	rig.roundCtx(ctx, 0, true)
	rig.roundCtx(ctx, time.Millisecond, false)
	var other string // the hot shard's owner: the target of the cold half
	testkit.Eventually(t, "both targets asked", 10*time.Second, testkit.Holds(func() bool {
		for _, o := range []string{"b", "c"} {
			if answers.askedOf(o) > 0 {
				other = o
			}
		}
		return answers.askedOf("a") > 0 && other != ""
	}))
	answers.ready["a"] <- nil
	answered(t, rig, 1)
	rig.roundCtx(ctx, time.Millisecond, false)
	if rev := revokingShards(rig.view()); len(rev) != 0 {
		t.Fatalf("%v revoking while %s still prepares (%s): half an exchange", rev, other, describe(rig.view()))
	}
	answers.ready[other] <- nil
	answered(t, rig, 1) // the first answer was taken in by the last round
	rig.roundCtx(ctx, time.Millisecond, false)
	rev := revokingShards(rig.view())
	if len(rev) != 2 {
		t.Fatalf("%v revoking once both targets prepared (%s), want both halves", rev, describe(rig.view()))
	}
	for _, s := range rev {
		sh, _ := rig.view().Shard(s)
		if want := map[bool]string{true: "a", false: other}[load[s] == 8]; sh.To != want {
			t.Fatalf("shard %d (load %v) revoked to %q, want %q", s, load[s], sh.To, want)
		}
	}
}

// stuckByLoad starts a balancer with o (and loads) on the table no single
// move helps: a holds every cold shard (24 of load 1), b and c four hot
// ones each (load 8). It returns the rig and the loads.
func stuckByLoad(t *testing.T, o BalancerOptions) (*balancerRig, []float64) {
	load := make([]float64, 32)
	for s := range load {
		load[s] = 1
		if s < 8 {
			load[s] = 8
		}
	}
	o.Loads = func(_ *fsm.View, dst []float64) []float64 { return append(dst[:0], load...) }
	rig := newBalancerRig(t, 32, o)
	for _, id := range []string{"a", "b", "c"} {
		rig.session(id, ttl, false)
	}
	rig.grant("b", 0, 2, 4, 6)
	rig.grant("c", 1, 3, 5, 7)
	for s := uint32(8); s < 32; s++ {
		rig.grant("a", s)
	}
	rig.start()
	return rig, load
}
