package shards

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/shardown"
)

// prepCalls records the balancer's prepare calls and answers them when the
// test says.
type prepCalls struct {
	mu        sync.Mutex
	asked     []fsm.ShardItem
	abandoned []fsm.ShardItem
	answer    chan error // each call takes one answer
}

func newPrepCalls() *prepCalls { return &prepCalls{answer: make(chan error, 100)} }

func (p *prepCalls) prepare(ctx context.Context, to string, items []fsm.ShardItem, _ time.Duration) error {
	p.mu.Lock()
	p.asked = append(p.asked, items...)
	p.mu.Unlock()
	select {
	case err := <-p.answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *prepCalls) abandon(_ context.Context, _ string, items []fsm.ShardItem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.abandoned = append(p.abandoned, items...)
}

// waitAsked waits for the first call and returns how many moves it asked
// to prepare (one call: every move goes to b).
func (p *prepCalls) waitAsked(t *testing.T) int {
	t.Helper()
	testkit.Eventually(t, "asked", 10*time.Second, testkit.Holds(func() bool { n, _ := p.counts(); return n > 0 }))
	n, _ := p.counts()
	return n
}

func (p *prepCalls) counts() (asked, abandoned int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.asked), len(p.abandoned)
}

// preparedRig is a balancer rig whose moves are prepared: session a owns
// all 8 shards and session b (stable, as the term's first round finds it)
// should get half of them.
// Rounds run under the returned context, which the test's end cancels
// before it joins the prepare calls. report, if not nil, receives each
// round's report.
func preparedRig(t *testing.T, report func(*PlanReport)) (*balancerRig, *prepCalls, context.Context) {
	p := newPrepCalls()
	rig := newBalancerRig(t, 8, BalancerOptions{Prepare: p.prepare, Abandon: p.abandon, PrepareTimeout: 5 * time.Second, MaxMoves: 8,
		Report: report})
	rig.session("a", ttl, false)
	rig.grant("a", all(8)...)
	rig.session("b", ttl, false)
	rig.start()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		rig.b.stopPrepares()
	})
	return rig, p, ctx
}

// roundCtx is round with a context.
func (rig *balancerRig) roundCtx(ctx context.Context, d time.Duration, first bool) time.Time {
	rig.now = rig.now.Add(d)
	return rig.b.Round(ctx, rig.view(), rig.now, first)
}

// answered waits until the balancer has the answers of n prepare calls.
func answered(t *testing.T, rig *balancerRig, n int) {
	t.Helper()
	testkit.Eventually(t, "answered", 10*time.Second, testkit.Holds(func() bool {
		rig.b.prep.mu.Lock()
		defer rig.b.prep.mu.Unlock()
		return len(rig.b.prep.done) >= n
	}))
}

// TestBalancerPreparesBeforeRevoking: a planned move is revoked only once
// its target answered the prepare; after the release the shard goes to the
// target in the very next round, with no other round between.
func TestBalancerPreparesBeforeRevoking(t *testing.T) {
	rig, p, ctx := preparedRig(t, nil)
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	if rs := revokingShards(rig.view()); len(rs) != 0 {
		t.Fatalf("revoked %v before the target prepared", rs)
	}
	rig.roundCtx(ctx, time.Second, false) // still preparing: nothing changes, nothing asked twice
	if n, _ := p.counts(); n != k || len(revokingShards(rig.view())) != 0 {
		t.Fatalf("asked %d, revoking %v while preparing", n, revokingShards(rig.view()))
	}
	p.answer <- nil
	answered(t, rig, 1)
	rig.roundCtx(ctx, time.Second, false)
	rs := revokingShards(rig.view())
	if len(rs) != k {
		t.Fatalf("revoking %v after the prepare, want %d shards", rs, k)
	}
	for _, id := range rs {
		if sh, _ := rig.view().Shard(id); sh.To != "b" {
			t.Fatalf("shard %d revoked toward %q, want b", id, sh.To)
		}
		rig.release(id)
	}
	if !rig.b.grantDue(rig.view()) {
		t.Fatal("the released prepared shards are not due for a grant")
	}
	rig.roundCtx(ctx, time.Millisecond, false)
	owned, revoking, free := count(rig.view())
	if owned["a"] != 8-k || owned["b"] != k || len(revoking) != 0 || free != 0 {
		t.Fatalf("after the grant: %s", describe(rig.view()))
	}
	if _, ab := p.counts(); ab != 0 {
		t.Fatalf("%d prepares abandoned", ab)
	}
}

// TestBalancerPrepareTimeoutMovesOn: a target whose prepare does not
// answer in time (the call returns nil once its wait passed) is revoked
// toward as without a prepare.
func TestBalancerPrepareTimeoutMovesOn(t *testing.T) {
	rig, p, ctx := preparedRig(t, nil)
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	p.answer <- nil // what the target's side answers when the wait passed
	answered(t, rig, 1)
	rig.roundCtx(ctx, 5*time.Second, false)
	if rs := revokingShards(rig.view()); len(rs) != k {
		t.Fatalf("revoking %v after the timeout, want %d", rs, k)
	}
}

// TestBalancerAbandonsWhenPlanChanges: a target drained while it prepares
// is told the moves are abandoned, and the old owner keeps every shard.
func TestBalancerAbandonsWhenPlanChanges(t *testing.T) {
	rig, p, ctx := preparedRig(t, nil)
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	rig.drain("b")
	rig.roundCtx(ctx, time.Second, false)
	testkit.Eventually(t, "abandoned", 10*time.Second, testkit.Holds(func() bool { _, n := p.counts(); return n == k }))
	p.answer <- nil // the late answer of an abandoned prepare changes nothing
	answered(t, rig, 1)
	rig.roundCtx(ctx, time.Second, false)
	owned, revoking, _ := count(rig.view())
	if owned["a"] != 8 || len(revoking) != 0 {
		t.Fatalf("after the plan changed: %s", describe(rig.view()))
	}
}

// TestBalancerPrepareFailureHolds: a target that cannot be asked (gone)
// leaves the old owner serving; the move is asked again after
// PrepareTimeout, not before.
func TestBalancerPrepareFailureHolds(t *testing.T) {
	rig, p, ctx := preparedRig(t, nil)
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	p.answer <- errors.New("connection refused")
	answered(t, rig, 1)
	wake := rig.roundCtx(ctx, time.Second, false)
	if rs := revokingShards(rig.view()); len(rs) != 0 {
		t.Fatalf("revoked %v toward a target that could not prepare", rs)
	}
	if n, _ := p.counts(); n != k {
		t.Fatalf("asked %d, want %d (no retry before PrepareTimeout)", n, k)
	}
	if want := rig.now.Add(5 * time.Second); wake.After(want) {
		t.Fatalf("next round at %v, want the retry by %v", wake, want)
	}
	rig.roundCtx(ctx, 5*time.Second-time.Millisecond, false)
	if n, _ := p.counts(); n != k {
		t.Fatalf("asked again before PrepareTimeout")
	}
	rig.roundCtx(ctx, time.Millisecond, false)
	testkit.Eventually(t, "asked again", 10*time.Second, testkit.Holds(func() bool { n, _ := p.counts(); return n == 2*k }))
}

// TestBalancerTermEndCancelsPrepares: the term's end cancels the calls
// under way and joins them; the targets are not told (a next leader
// planning the same moves finds them prepared).
func TestBalancerTermEndCancelsPrepares(t *testing.T) {
	rig, p, rctx := preparedRig(t, nil)
	ctx, stop := context.WithCancel(rctx)
	rig.roundCtx(ctx, 0, true)
	p.waitAsked(t)
	stop()
	rig.b.stopPrepares()
	if _, ab := p.counts(); ab != 0 || len(revokingShards(rig.view())) != 0 {
		t.Fatalf("abandoned %d, revoking %v after the term ended", ab, revokingShards(rig.view()))
	}
}

// TestBalancerKeepsPreparedMovesWhenThePlanShifts: moves under prepare
// stay the plan's when the table shifts under them (a new member joins,
// and a fresh plan would pick other shards and targets): the next round
// plans around them (c's share comes from the shards not under prepare)
// and revokes them toward their targets once they are ready.
func TestBalancerKeepsPreparedMovesWhenThePlanShifts(t *testing.T) {
	rig, p, ctx := preparedRig(t, nil)
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	p.mu.Lock()
	toB := append([]fsm.ShardItem(nil), p.asked...)
	p.mu.Unlock()
	rig.session("c", ttl, false)
	rig.roundCtx(ctx, time.Second, false)
	kept := 0
	for _, it := range toB {
		if pm := rig.b.prep.moves[it.Shard]; pm != nil && pm.to == "b" {
			kept++
		}
	}
	if kept != k {
		t.Fatalf("%d of %d moves to b still prepared after c joined (round's moves %+v); want all: c's share comes from the rest", kept, k, rig.b.moves)
	}
	// Two calls are under way, b's and c's (its share, asked in the round
	// above), and either may take either answer: wait for both results, or
	// the round may see only c's and revoke nothing toward b yet.
	for range 2 {
		p.answer <- nil
	}
	answered(t, rig, 2)
	rig.roundCtx(ctx, time.Second, false)
	toward := map[string]int{}
	for _, id := range revokingShards(rig.view()) {
		sh, _ := rig.view().Shard(id)
		toward[sh.To]++
	}
	if toward["b"] != kept {
		t.Fatalf("revoking toward %v once b answered; want %d toward b (%s)", toward, kept, describe(rig.view()))
	}
}

// TestCarriedMoveCountedOnce: a move whose prepare spans several rounds is
// proposed again by each of them (carried on), but
// holdfast_balancer_moves_total counts it once, under the reason it was
// planned for (count here), and every round's report gives it that
// reason, not drain: no session is drained.
func TestCarriedMoveCountedOnce(t *testing.T) {
	var last *PlanReport
	rig, p, ctx := preparedRig(t, func(rep *PlanReport) { last = rep })
	moves := rig.b.o.Metrics.balance.moves
	rig.roundCtx(ctx, 0, true)
	k := p.waitAsked(t)
	for round := range 3 {
		if round > 0 {
			rig.roundCtx(ctx, time.Second, false) // still preparing
		}
		if len(last.Moves) != k {
			t.Fatalf("round %d: report %+v, want the %d moves under prepare", round, last.Moves, k)
		}
		for _, m := range last.Moves {
			if m.Reason != shardown.ReasonCount {
				t.Fatalf("round %d: move %+v reported as %q, want count", round, m, m.Reason)
			}
		}
		if c, d := testutil.ToFloat64(moves.WithLabelValues("count")), testutil.ToFloat64(moves.WithLabelValues("drain")); c != float64(k) || d != 0 {
			t.Fatalf("round %d: moves_total count %v, drain %v; want %d and 0", round, c, d, k)
		}
	}
}
