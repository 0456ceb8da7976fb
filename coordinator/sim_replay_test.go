package coordinator_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSimulationReplay runs seeds of TestSimulation again, each in a
// child of its own, and compares the runs. By default it runs
// simReplayDefault passing seeds twice and asserts that their event logs
// (every fault, heal, grant and end with its virtual time) are
// byte-identical. With HOLDFAST_SIM_REPLAY_SEEDS (a comma-separated list,
// typically the failing seeds of a broken build, with the same -sim.break
// and tags) it runs each seed HOLDFAST_SIM_REPLAYS times (default 10) and
// reports how many runs failed the same way as the first (the same
// invariants violated) and how many had the first run's event log.
//
//	go test -tags holdfast_break_release ./coordinator -run TestSimulationReplay -sim.break=release-unchecked \
//	    -args HOLDFAST_SIM_REPLAY_SEEDS=3,7  # (or set the variable in the environment)
func TestSimulationReplay(t *testing.T) {
	if os.Getenv(simChildEnv) != "" {
		t.Skip("a child of TestSimulation")
	}
	seeds, runs, failing := simReplayDefault, 2, false
	if v := os.Getenv("HOLDFAST_SIM_REPLAY_SEEDS"); v != "" {
		seeds, runs, failing = nil, 10, true
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("HOLDFAST_SIM_REPLAY_SEEDS=%q: %v", v, err)
			}
			seeds = append(seeds, n)
		}
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
		for i := range runs {
			rs := simFanOut(t, seed, 1, 1, failing)
			if len(rs) != 1 {
				t.Fatalf("seed %d run %d: %d results", seed, i, len(rs))
			}
			if i == 0 {
				first = rs[0]
				continue
			}
			total++
			if slices.Equal(rs[0].Kinds, first.Kinds) {
				same++
			}
			if rs[0].Events == first.Events {
				identical++
			} else if !failing {
				t.Errorf("seed %d: run %d's event log differs from the first run's (%s vs %s)", seed, i+1, rs[0].Events, first.Events)
			}
		}
		if failing && len(first.Kinds) == 0 {
			t.Logf("seed %d did not fail on its first run", seed)
		}
	}
	t.Logf("replays: %d of %d failed the same way as the first run of their seed, %d of %d had its event log byte for byte",
		same, total, identical, total)
}

// simReplayDefault are the seeds TestSimulationReplay runs twice by default.
var simReplayDefault = []uint64{1, 2, 3}
