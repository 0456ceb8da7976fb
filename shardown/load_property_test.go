package shardown

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// loadsAfter returns each member's load once the moves of the given
// reason (all moves for "") are applied to cur; a shard without a report
// weighs the mean of the reported ones.
func loadsAfter(cur []string, moves []Move, load []float64, reason string) map[string]float64 {
	sum, n := 0.0, 0
	for _, l := range load {
		if l >= 0 {
			sum, n = sum+l, n+1
		}
	}
	eff := slices.Clone(load)
	for k, l := range eff {
		if l < 0 {
			eff[k] = sum / float64(n)
		}
	}
	t := slices.Clone(cur)
	for _, mv := range moves {
		if reason == "" || mv.Reason == reason || reason == "!"+ReasonLoad && mv.Reason != ReasonLoad {
			t[mv.Shard] = mv.To
		}
	}
	return memberLoads(t, eff)
}

// distanceOf is the planner's distance from balance, computed from the
// targets in bal and the loads ml.
func distanceOf(bal []MemberBalance, ml map[string]float64) float64 {
	d := 0.0
	for _, b := range bal {
		if !b.InPool || b.Target <= 0 {
			continue
		}
		r := ml[b.ID] / b.Target
		if r > 1 {
			d = max(d, r-1)
		} else if b.Eligible && !b.Stuck {
			d = max(d, 1-r)
		}
	}
	return d
}

// potentialOf is Σ (load-target)²/target over the pool members of bal.
func potentialOf(bal []MemberBalance, ml map[string]float64) float64 {
	phi := 0.0
	for _, b := range bal {
		if b.InPool && b.Target > 0 {
			phi += (ml[b.ID] - b.Target) * (ml[b.ID] - b.Target) / b.Target
		}
	}
	return phi
}

// TestPropertyLoadPlans: random members (weights, holds, stabilization),
// random tables and random loads (Zipf, uniform, some or all unreported).
// Every plan keeps the rate limit and the table rules (checkStep), never
// gives a shard to an ineligible member, moves by load only when a member
// is outside the band and within the budget, and its load moves lower the
// potential; PlanChanged and a shuffled member order give the same plan;
// repeated calls converge. It runs 300 cases; HOLDFAST_SHARDOWN_CASES=N
// runs N.
func TestPropertyLoadPlans(t *testing.T) {
	for i := range cases(t, 300) {
		r, seed := seeded(t, baseSeed+200, i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyLoadCase(t, r, seed) })
	}
}

// propertyLoadCase runs one seeded case of TestPropertyLoadPlans: it draws
// a random load case, plans it, and checks the plan (checkStep, the load
// rules, invariance under member order and PlanChanged, convergence with
// pins kept).
func propertyLoadCase(t *testing.T, r *rand.Rand, seed uint64) {
	ms, cur, p := randomLoadCase(r)
	var pl Planner
	moves, err := pl.Plan(ms, cur, p)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	moves = slices.Clone(moves)
	target, _, err := Plan(ms, cur, p)
	if err != nil {
		t.Fatal(err)
	}
	checkStep(t, ms, cur, target, moves, p)
	bal, byLoad := pl.Balance(nil)
	if !byLoad {
		t.Fatalf("seed %d: reports given but not planned by load", seed)
	}
	checkLoadMoves(t, seed, cur, moves, bal, p)
	checkPlanInvariance(t, r, seed, ms, cur, moves, p)
	// Repeated calls converge (no member is outside the band, or no
	// move lowers the potential).
	p.MaxMovesInFlight = -1
	final, _, _ := convergeLoad(t, ms, cur, p)
	for _, pin := range p.Pins {
		if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == pin.Member && m.Hold }) && final[pin.Shard] != pin.Member {
			t.Fatalf("seed %d: shard %d pinned to %s ended on %q", seed, pin.Shard, pin.Member, final[pin.Shard])
		}
	}
}

// randomLoadCase draws, from r, up to 8 members (some holding, with random
// join times), a table of 1..300 shards, a load per shard (unreported,
// uniform or Zipf-like; shard 0 weighs 1 if no other report is positive,
// since the case is by load) and Params with a random rate limit, stabilization,
// load ratio, load-move budget and up to 4 pins. It returns the members,
// the current table and the Params (the loads are p.Load).
func randomLoadCase(r *rand.Rand) ([]Member, []string, Params) {
	ms := randomMembers(r, 8, r.IntN(2) == 0)
	for i := range ms {
		ms[i].Hold = r.IntN(8) == 0
		ms[i].JoinedAt = uint64(r.IntN(20))
	}
	s := randRange(r, 1, 300)
	cur := randomTable(r, s, ms)
	load := make([]float64, s)
	for k := range load {
		switch r.IntN(4) {
		case 0:
			load[k] = -1
		case 1:
			load[k] = r.Float64() * 10
		default:
			load[k] = 100 / math.Pow(float64(1+r.IntN(s)), 1.1)
		}
	}
	if !slices.ContainsFunc(load, func(l float64) bool { return l > 0 }) {
		load[0] = 1 // at least one report with a positive total: by load
	}
	p := Params{Shards: s, Load: load, MaxMovesInFlight: randRange(r, -1, 40), Now: 20, JoinStabilization: uint64(r.IntN(15)),
		LoadRatio: 1.02 + 0.3*r.Float64(), LoadMoves: randRange(r, -1, 10)}
	for _, s := range r.Perm(s)[:r.IntN(min(s, 4)+1)] {
		p.Pins = append(p.Pins, Pin{Shard: ShardID(s), Member: ms[r.IntN(len(ms))].ID})
	}
	return ms, cur, p
}

// checkLoadMoves fails the test unless every move goes to an eligible
// member (pins excepted), every move is a pin, a grant of a free shard or
// a load move, and, when there are load moves, the distance after the
// other moves is outside the band, the load moves keep to the budget and
// they lower the potential.
func checkLoadMoves(t *testing.T, seed uint64, cur []string, moves []Move, bal []MemberBalance, p Params) {
	t.Helper()
	load := p.Load
	byID := map[string]MemberBalance{}
	for _, b := range bal {
		byID[b.ID] = b
	}
	nLoad := 0
	for _, mv := range moves {
		if !byID[mv.To].Eligible && mv.Reason != ReasonPin {
			t.Fatalf("seed %d: move %+v to an ineligible member", seed, mv)
		}
		switch {
		case mv.Reason == ReasonLoad:
			nLoad++
		case mv.Reason == ReasonPin:
		case mv.Reason != ReasonFree || mv.From != "":
			t.Fatalf("seed %d: move %+v: by load, only pins, grants of free shards and load moves", seed, mv)
		}
	}
	afterGrants := loadsAfter(cur, moves, load, "!"+ReasonLoad)
	dist := distanceOf(bal, afterGrants)
	if nLoad > 0 {
		if dist <= p.LoadRatio-1+1e-9 {
			t.Fatalf("seed %d: %d load moves at distance %v, inside the band %v", seed, nLoad, dist, p.LoadRatio)
		}
		if bound := int(math.Ceil(float64(p.LoadMoves) * dist / (p.LoadRatio - 1))); p.LoadMoves > 0 && nLoad > bound {
			t.Fatalf("seed %d: %d load moves, budget %d", seed, nLoad, bound)
		}
		before, after := potentialOf(bal, afterGrants), potentialOf(bal, loadsAfter(cur, moves, load, ""))
		if after >= before {
			t.Fatalf("seed %d: load moves did not lower the potential (%v -> %v)", seed, before, after)
		}
	}
}

// checkPlanInvariance fails the test unless Plan on a shuffled member
// order, and PlanChanged with every shard changed (on a Planner first run
// on another random table), give the same moves as the plan. It draws the
// shuffle and that table from r.
func checkPlanInvariance(t *testing.T, r *rand.Rand, seed uint64, ms []Member, cur []string, moves []Move, p Params) {
	t.Helper()
	s := p.Shards
	// Member order and PlanChanged do not matter.
	shuffled := slices.Clone(ms)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if _, m2, _ := Plan(shuffled, cur, p); !slices.Equal(m2, moves) {
		t.Fatalf("seed %d: member order changed the plan", seed)
	}
	var pc Planner
	if _, err := pc.Plan(ms, randomTable(r, s, ms), p); err != nil {
		t.Fatal(err)
	}
	all := make([]ShardID, s)
	for k := range all {
		all[k] = ShardID(k)
	}
	if m3, _ := pc.PlanChanged(ms, cur, all, p); !slices.Equal(m3, moves) {
		t.Fatalf("seed %d: PlanChanged differs from Plan", seed)
	}
}
