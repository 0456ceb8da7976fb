package coordinator_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSimulationReplay measures how well TestSimulation's seeds replay:
// with HOLDFAST_SIM_REPLAY_SEEDS (a comma-separated list, typically the
// failing seeds of a broken build, run with the same -sim.break and tags)
// it runs each seed HOLDFAST_SIM_REPLAYS times (default 10), each in a
// fresh child as TestSimulation does, and reports how many runs failed the
// same way as the seed's first run (the same invariants violated) and how
// many had its event log byte for byte. Without the variable it is
// skipped: two runs of a seed part once the Go runtime's own random
// choices (select, map order) differ, so byte-identical logs are not a
// property to assert (see docs/TESTING.md).
//
//	HOLDFAST_SIM_REPLAY_SEEDS=3,7 go test ./coordinator -run TestSimulationReplay -sim.break=margin0
func TestSimulationReplay(t *testing.T) {
	v := os.Getenv("HOLDFAST_SIM_REPLAY_SEEDS")
	if os.Getenv(simChildEnv) != "" || v == "" {
		t.Skip("set HOLDFAST_SIM_REPLAY_SEEDS to measure replays")
	}
	var seeds []uint64
	runs, failing := 10, *simBreakFlag != ""
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("HOLDFAST_SIM_REPLAY_SEEDS=%q: %v", v, err)
		}
		seeds = append(seeds, n)
	}
	if v := os.Getenv("HOLDFAST_SIM_REPLAYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("HOLDFAST_SIM_REPLAYS=%q: want a number above 1", v)
		}
		runs = n
	}
	same, identical, total := 0, 0, 0
	for _, seed := range seeds {
		var first simResultLine
		seedSame, seedIdentical := 0, 0
		for i := range runs {
			rs := simFanOut(t, []uint64{seed}, 1, failing)
			if len(rs) != 1 {
				t.Fatalf("seed %d run %d: %d results", seed, i, len(rs))
			}
			if i == 0 {
				first = rs[0]
				continue
			}
			total++
			if slices.Equal(rs[0].Kinds, first.Kinds) {
				seedSame++
			}
			if rs[0].Events == first.Events {
				seedIdentical++
			}
		}
		same, identical = same+seedSame, identical+seedIdentical
		t.Logf("seed %d (first run: %v): %d of %d replays failed the same way, %d byte for byte",
			seed, first.Kinds, seedSame, runs-1, seedIdentical)
		if failing && len(first.Kinds) == 0 {
			t.Logf("seed %d did not fail on its first run", seed)
		}
	}
	t.Logf("replays: %d of %d failed the same way as the first run of their seed, %d of %d had its event log byte for byte",
		same, total, identical, total)
}
