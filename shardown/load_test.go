package shardown

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// zipfLoads returns s shard loads following Zipf's law with exponent e
// (the k-th heaviest carries 1/k^e), assigned to shards in a random order.
func zipfLoads(r *rand.Rand, s int, e float64) []float64 {
	l := make([]float64, s)
	for k := range l {
		l[k] = 1000 / math.Pow(float64(k+1), e)
	}
	r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
	return l
}

// roundRobin is a table balanced by count: shard s to member s mod n.
func roundRobin(ms []Member, s int) []string {
	t := make([]string, s)
	for i := range t {
		t[i] = ms[i%len(ms)].ID
	}
	return t
}

// memberLoads sums the loads of each member's shards in table.
func memberLoads(table []string, load []float64) map[string]float64 {
	out := map[string]float64{}
	for s, o := range table {
		if o != "" {
			out[o] += load[s]
		}
	}
	return out
}

// waterTargets computes each member's target independently of the
// planner: total load in proportion to weight, except that a member whose
// heaviest shard alone is above ratio times its share gets that shard's
// load as target and the others share the rest.
func waterTargets(ms []Member, table []string, load []float64, ratio float64) (map[string]float64, map[string]bool) {
	hot, ml := map[string]float64{}, memberLoads(table, load)
	for s, o := range table {
		hot[o] = max(hot[o], load[s])
	}
	stuck := map[string]bool{}
	for {
		rest, w := 0.0, 0.0
		for _, m := range ms {
			rest += ml[m.ID]
			if stuck[m.ID] {
				rest -= hot[m.ID]
			} else {
				w += weightOf(m)
			}
		}
		grew := false
		for _, m := range ms {
			if !stuck[m.ID] && w > 0 && hot[m.ID] > ratio*rest/w*weightOf(m)+1e-9 {
				stuck[m.ID], grew = true, true
			}
		}
		if !grew {
			t := map[string]float64{}
			for _, m := range ms {
				t[m.ID] = rest / w * weightOf(m)
				if stuck[m.ID] {
					t[m.ID] = hot[m.ID]
				}
			}
			return t, stuck
		}
	}
}

// spread returns the largest and smallest load/target of the members that
// are not stuck.
func spread(ms []Member, table []string, load []float64, ratio float64) (hi, lo float64) {
	t, stuck := waterTargets(ms, table, load, ratio)
	ml := memberLoads(table, load)
	hi, lo = 0, math.Inf(1)
	for _, m := range ms {
		if stuck[m.ID] {
			continue
		}
		r := ml[m.ID] / t[m.ID]
		hi, lo = max(hi, r), min(lo, r)
	}
	return hi, lo
}

// nonStuck returns the first member not in stuck.
func nonStuck(ms []Member, stuck map[string]bool) string {
	for _, m := range ms {
		if !stuck[m.ID] {
			return m.ID
		}
	}
	return ""
}

// convergeLoad plans until no move is left and returns the table, the
// moves and the calls it took.
func convergeLoad(t *testing.T, ms []Member, cur []string, p Params) ([]string, int, int) {
	t.Helper()
	total := 0
	for call := 1; ; call++ {
		target, moves, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatal(err)
		}
		checkStep(t, ms, cur, target, moves, p)
		if len(moves) == 0 {
			return cur, total, call
		}
		total += len(moves)
		cur = target
		if call > p.Shards {
			t.Fatalf("no convergence after %d calls", call)
		}
	}
}

// TestLoadZipfEqualCapacity: 8 equal members, 1,024 shards with Zipf
// (s=1.1) loads, starting from a table balanced by count. Balancing by
// load brings every member not held by one hot shard within 10% of its
// target, and a stuck member carries its hot shard alone.
func TestLoadZipfEqualCapacity(t *testing.T) {
	r, seed := seeded(t, baseSeed, 0)
	t.Logf("seed %d", seed)
	ms := uniform(8)
	load := zipfLoads(r, 1024, 1.1)
	p := Params{Shards: 1024, Load: load}
	cur := roundRobin(ms, 1024)
	hi0, _ := spread(ms, cur, load, DefaultLoadRatio)
	final, moves, calls := convergeLoad(t, ms, cur, p)
	hi, lo := spread(ms, final, load, DefaultLoadRatio)
	t.Logf("count-balanced max/target %.3f; by load %.3f..%.3f after %d moves in %d calls", hi0, lo, hi, moves, calls)
	if hi > DefaultLoadRatio+1e-9 || lo < 2-DefaultLoadRatio-1e-9 {
		t.Fatalf("by load: load/target in [%.3f, %.3f], want within [0.90, 1.10]", lo, hi)
	}
	tg, stuck := waterTargets(ms, final, load, DefaultLoadRatio)
	ml := memberLoads(final, load)
	for id := range stuck {
		t.Logf("member %s holds a hot shard of %.0f (%.2f of the others' mean target) and carries %.0f", id, tg[id], tg[id]/tg[nonStuck(ms, stuck)], ml[id])
		if ml[id] > DefaultLoadRatio*tg[id]+1e-9 {
			t.Fatalf("stuck member %s carries %.0f beside a hot shard of %.0f", id, ml[id]-tg[id], tg[id])
		}
	}
}

// TestLoadCapacities: capacities 1, 1, 2, 2, 4, 4, 8, 8: each member's
// load/capacity ends within 10% of the mean.
func TestLoadCapacities(t *testing.T) {
	r, seed := seeded(t, baseSeed, 1)
	t.Logf("seed %d", seed)
	ms := uniform(8)
	for i := range ms {
		ms[i].Weight = float64(int(1) << (i / 2))
	}
	load := zipfLoads(r, 1024, 1.1)
	final, moves, _ := convergeLoad(t, ms, roundRobin(ms, 1024), Params{Shards: 1024, Load: load})
	hi, lo := spread(ms, final, load, DefaultLoadRatio)
	t.Logf("load/target %.3f..%.3f after %d moves", lo, hi, moves)
	if hi > DefaultLoadRatio+1e-9 || lo < 2-DefaultLoadRatio-1e-9 {
		t.Fatalf("load/target in [%.3f, %.3f], want within [0.90, 1.10]", lo, hi)
	}
}

// TestLoadWithoutReportsIsCount: no report (nil, all negative or NaN, or
// all zero) plans exactly as by count.
func TestLoadWithoutReportsIsCount(t *testing.T) {
	for i := range 50 {
		r, seed := seeded(t, baseSeed+100, i)
		ms := randomMembers(r, 6, i%2 == 0)
		s := randRange(r, 1, 200)
		cur := randomTable(r, s, ms)
		p := Params{Shards: s, MaxMovesInFlight: randRange(r, -1, 8)}
		wantT, wantM, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, fill := range []float64{-1, math.NaN(), 0} {
			q := p
			q.Load = slices.Repeat([]float64{fill}, s)
			gotT, gotM, err := Plan(ms, cur, q)
			if err != nil || !slices.Equal(gotT, wantT) || !slices.Equal(gotM, wantM) {
				t.Fatalf("seed %d, load %v: plan differs from the count plan (err %v)", seed, fill, err)
			}
		}
	}
}

// TestLoadUnreportedCountsAsMean: a shard without a report weighs the mean
// of the reported ones.
func TestLoadUnreportedCountsAsMean(t *testing.T) {
	ms := uniform(2)
	// a holds the reported 10 and 30 (mean 20), b the two unreported ones:
	// 40 against 40, balanced, nothing moves.
	_, moves, err := Plan(ms, []string{"m00", "m00", "m01", "m01"}, Params{Shards: 4, Load: []float64{10, 30, -1, -1}})
	if err != nil || len(moves) != 0 {
		t.Fatalf("moves %v, err %v; want none", moves, err)
	}
}

// TestLoadHysteresis: once balanced, load noise of ±3% moves nothing; a
// drift beyond the band moves a few shards, far fewer than a first
// balancing.
func TestLoadHysteresis(t *testing.T) {
	r, seed := seeded(t, baseSeed, 2)
	t.Logf("seed %d", seed)
	ms := uniform(8)
	load := zipfLoads(r, 1024, 1.1)
	p := Params{Shards: 1024, Load: load}
	cur, first, _ := convergeLoad(t, ms, roundRobin(ms, 1024), p)
	noisy := slices.Clone(load)
	for round := range 20 {
		for s := range noisy {
			noisy[s] = load[s] * (1 + 0.03*(2*r.Float64()-1))
		}
		p.Load = noisy
		if _, moves, _ := Plan(ms, cur, p); len(moves) != 0 {
			t.Fatalf("round %d: noise of 3%% moved %d shards", round, len(moves))
		}
	}
	// Swap the loads of a hot and a cold member's shards: a real drift.
	ml := memberLoads(cur, load)
	_, stuck := waterTargets(ms, cur, load, DefaultLoadRatio)
	drift, hot := slices.Clone(load), nonStuck(ms, stuck)
	for s, o := range cur {
		if o == hot {
			drift[s] *= 1.3
		}
	}
	p.Load = drift
	_, moves, _ := convergeLoad(t, ms, cur, p)
	t.Logf("first balancing %d moves; after %s's load grew 30%% (from %.0f): %d moves", first, hot, ml[hot], moves)
	if moves == 0 || moves*4 > first {
		t.Fatalf("drift moved %d shards; want some, and far fewer than the first balancing's %d", moves, first)
	}
}

// TestLoadBudgetGrowsWithDistance: one call's load moves stay within the
// budget LoadMoves·distance/(R-1), so a table far from balance moves more
// per call than one just outside the band.
func TestLoadBudgetGrowsWithDistance(t *testing.T) {
	ms := uniform(4)
	s := 256
	near, far := make([]float64, s), make([]float64, s)
	for i := range near {
		near[i], far[i] = 1, 1
		if i%4 == 0 {
			near[i], far[i] = 1.2, 3 // m00's shards
		}
	}
	cur := roundRobin(ms, s)
	var got [2]int
	for k, load := range [][]float64{near, far} {
		p := Params{Shards: s, Load: load, LoadMoves: 2, MaxMovesInFlight: -1}
		_, moves, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatal(err)
		}
		ml := memberLoads(cur, load)
		mean := (ml["m00"] + ml["m01"] + ml["m02"] + ml["m03"]) / 4
		dist := ml["m00"]/mean - 1
		budget := int(math.Ceil(2 * dist / (DefaultLoadRatio - 1)))
		if len(moves) == 0 || len(moves) > budget {
			t.Fatalf("distance %.2f: %d moves, budget %d", dist, len(moves), budget)
		}
		got[k] = len(moves)
	}
	if got[1] <= got[0] {
		t.Fatalf("moves per call near %d, far %d: want more when further from balance", got[0], got[1])
	}
}
