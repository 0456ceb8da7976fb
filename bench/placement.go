package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/shardown"
)

// placementSeed seeds the simulated loads (printed with the results).
const placementSeed = 20261202

// The placement workload runs the pure planner (shardown) in-process, as
// the leader's balancer does each round, on simulated shard loads: no
// cluster, no network. It measures what the planner decides (balance,
// moves), which is what placement is; the handoffs themselves are the
// handoff and scale workloads' subject.
func placementWorkload(w io.Writer) error {
	fmt.Fprintf(w, "\n## Placement by load (the pure planner in-process, simulated loads, seed %d)\n\n", placementSeed)
	fmt.Fprintln(w, "8 nodes, 1,024 shards, Zipf shard loads (s = 1.1, ranks shuffled over the shards). A round plans with at most")
	fmt.Fprintln(w, "S/16 = 64 moves (Shards.MaxMoves' default) and the moves are applied before the next round, as completed handoffs.")
	fmt.Fprintln(w, "max/mean is the most loaded node's load/capacity over the mean; 'others' leaves out a node that holds a shard")
	fmt.Fprintln(w, "heavier than 1.1 × the mean by itself (no placement can lower it: the bound is that shard alone; the hottest")
	fmt.Fprintln(w, "shard carries 18% of the total, 1.43 × an eighth) and compares the rest with their own mean.")
	fmt.Fprintln(w)
	r := rand.New(rand.NewPCG(placementSeed, 1))
	load := zipf(r, 1024, 1.1)
	fmt.Fprintln(w, "| capacities | balancing | max/mean | others max/mean | others min/mean | moves | rounds |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, caps := range [][]float64{{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 2, 2, 4, 4, 8, 8}} {
		ms := make([]shardown.Member, len(caps))
		for i := range ms {
			ms[i] = shardown.Member{ID: fmt.Sprintf("node%d", i), Weight: caps[i]}
		}
		capName := "equal"
		if caps[2] != 1 {
			capName = "1,1,2,2,4,4,8,8"
		}
		p := shardown.Params{Shards: 1024, MaxMovesInFlight: 64}
		byCount, _, _, err := converge(ms, make([]string, 1024), p)
		if err != nil {
			return err
		}
		row := func(how string, table []string, moves, rounds int) {
			mx, omx, omn := spreadOf(ms, table, load)
			fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %d | %d |\n", capName, how, mx, omx, omn, moves, rounds)
		}
		row("by count (today)", byCount, 0, 0)
		p.Load = load
		byLoad, moves, rounds, err := converge(ms, byCount, p)
		if err != nil {
			return err
		}
		row("by load, from the count table", byLoad, moves, rounds)
		if capName == "equal" {
			if err := drift(w, ms, byLoad, load, r); err != nil {
				return err
			}
		}
	}
	return planCost(w, r)
}

// zipf returns s loads following Zipf's law with exponent e, the ranks
// shuffled over the shards.
func zipf(r *rand.Rand, s int, e float64) []float64 {
	l := make([]float64, s)
	for k := range l {
		l[k] = 1000 / math.Pow(float64(k+1), e)
	}
	r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
	return l
}

// converge plans rounds, applying each round's moves, until a round plans
// none; it returns the table, the moves and the rounds that moved.
func converge(ms []shardown.Member, table []string, p shardown.Params) ([]string, int, int, error) {
	total, rounds := 0, 0
	for {
		next, moves, err := shardown.Plan(ms, table, p)
		if err != nil {
			return nil, 0, 0, err
		}
		if len(moves) == 0 {
			return table, total, rounds, nil
		}
		total, rounds, table = total+len(moves), rounds+1, next
		if rounds > 10_000 {
			return nil, 0, 0, fmt.Errorf("no convergence after %d rounds", rounds)
		}
	}
}

// spreadOf returns the largest load/capacity over the mean of all nodes,
// and the largest and smallest of the others, those that do not hold a
// shard heavier than 1.1 × the mean by itself, over the others' mean (the
// planner's target for them: the hot node's shard is not theirs to share).
func spreadOf(ms []shardown.Member, table []string, load []float64) (maxAll, maxOthers, minOthers float64) {
	nodeLoad, hot := map[string]float64{}, map[string]float64{}
	total, capSum := 0.0, 0.0
	for s, o := range table {
		nodeLoad[o] += load[s]
		hot[o] = max(hot[o], load[s])
		total += load[s]
	}
	for _, m := range ms {
		capSum += m.Weight
	}
	mean := total / capSum
	others, otherCap := total, capSum
	for _, m := range ms {
		maxAll = max(maxAll, nodeLoad[m.ID]/m.Weight/mean)
		if hot[m.ID] > 1.1*mean*m.Weight {
			others, otherCap = others-nodeLoad[m.ID], otherCap-m.Weight
		}
	}
	minOthers = math.Inf(1)
	for _, m := range ms {
		if hot[m.ID] <= 1.1*mean*m.Weight {
			rel := nodeLoad[m.ID] / m.Weight / (others / otherCap)
			maxOthers, minOthers = max(maxOthers, rel), min(minOthers, rel)
		}
	}
	return maxAll, maxOthers, minOthers
}

// drift simulates an hour of rounds every 10 s from the balanced table:
// first the load still (each round's reports the base loads with ±3%
// uniform noise, unsmoothed: harsher than the EWMA the nodes send), then
// drifting (every shard's load a random walk of 1% per round, about 19% an
// hour, plus the same noise).
func drift(w io.Writer, ms []shardown.Member, table []string, base []float64, r *rand.Rand) error {
	const rounds = 360 // an hour of rounds 10 s apart
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Once balanced (equal capacities), an hour of rounds every 10 s:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| load | moves/minute | rounds that moved | worst others max/mean seen | others max/mean at the end |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, drifting := range []bool{false, true} {
		cur, walk := slices.Clone(table), slices.Clone(base)
		load := make([]float64, len(base))
		moves, moved, worst, last := 0, 0, 0.0, 0.0
		for range rounds {
			for s := range load {
				if drifting {
					walk[s] *= math.Exp(0.01 * r.NormFloat64())
				}
				load[s] = walk[s] * (1 + 0.03*(2*r.Float64()-1))
			}
			next, mv, err := shardown.Plan(ms, cur, shardown.Params{Shards: len(cur), MaxMovesInFlight: 64, Load: load})
			if err != nil {
				return err
			}
			if len(mv) > 0 {
				moves, moved, cur = moves+len(mv), moved+1, next
			}
			_, last, _ = spreadOf(ms, cur, walk)
			worst = max(worst, last)
		}
		name := "still (±3% noise)"
		if drifting {
			name = "drifting (1%/round walk)"
		}
		fmt.Fprintf(w, "| %s | %.2f | %d of %d | %.3f | %.3f |\n", name, float64(moves)/60, moved, rounds, worst, last)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| capacities | balancing | max/mean | others max/mean | others min/mean | moves | rounds |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	return nil
}

// planCost times one planning round by load (nothing to move, the
// balanced case every round hits) at 1,024 and 100,000 shards.
func planCost(w io.Writer, r *rand.Rand) error {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shards | nodes | one round, balanced, by count | by load |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range []int{1024, 100_000} {
		ms := make([]shardown.Member, 8)
		for i := range ms {
			ms[i] = shardown.Member{ID: fmt.Sprintf("node%d", i)}
		}
		load := zipf(r, s, 1.1)
		var times [2]time.Duration
		for k, l := range [][]float64{nil, load} {
			p := shardown.Params{Shards: s, MaxMovesInFlight: -1, Load: l}
			table, _, _, err := converge(ms, make([]string, s), p)
			if err != nil {
				return err
			}
			var pl shardown.Planner
			const reps = 20
			start := time.Now()
			for range reps {
				if _, err := pl.Plan(ms, table, p); err != nil {
					return err
				}
			}
			times[k] = time.Since(start) / reps
		}
		fmt.Fprintf(w, "| %d | 8 | %v | %v |\n", s, times[0].Round(time.Microsecond), times[1].Round(time.Microsecond))
	}
	return nil
}
