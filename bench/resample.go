package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// resampleDraws and resampleSeed fix the resampling of the failover
// verdict, so that one run's output always says the same of its kills.
const (
	resampleDraws = 10000
	resampleSeed  = 20261207
)

// medianAboveShare draws, draws times, a sample of a's size from a and one
// of b's size from b (both with replacement) and returns the share of the
// draws in which a's median is above b's. Taking each system's kills for
// its distribution, it is how often a run of the same size would find a's
// median above b's: near 0 or 1, the run's comparison is settled; near
// one half, it is a coin toss. NaN when either side has no values.
func medianAboveShare(a, b []float64, draws int, seed uint64) float64 {
	if len(a) == 0 || len(b) == 0 || draws <= 0 {
		return math.NaN()
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	sa, sb := make([]float64, len(a)), make([]float64, len(b))
	above := 0
	for range draws {
		for i := range sa {
			sa[i] = a[rng.IntN(len(a))]
		}
		for i := range sb {
			sb[i] = b[rng.IntN(len(b))]
		}
		if median(sa) > median(sb) {
			above++
		}
	}
	return float64(above) / float64(draws)
}

// resampledNote says, for each replica count of counts where the metric
// was measured, in what share of resampled runs holdfast's median comes
// out above each peer's ("" when none was measured). The failover verdict
// carries it: a kill lands at a random point of a renewal cycle, so a
// median of a few kills moves by more than the systems differ.
func (t targetRun) resampledNote(counts []int, title, name string) string {
	var parts []string
	for _, r := range counts {
		m := t.metricAt(r, title, name)
		if m == nil {
			continue
		}
		var each []string
		for _, k := range t.o.peers {
			if s := medianAboveShare(m.of(hfName), m.of(k.name), resampleDraws, resampleSeed); !math.IsNaN(s) {
				each = append(each, fmt.Sprintf("%s's in %.0f %%", k.name, 100*s))
			}
		}
		if len(each) > 0 {
			parts = append(parts, fmt.Sprintf("at %d replica(s) above %s", r, strings.Join(each, ", ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" (each system's kills resampled %s times, holdfast's median comes out %s of the draws)",
		thousands(resampleDraws), strings.Join(parts, "; "))
}
