package coordinator_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// How TestSimulation runs one seed: a child process of the test binary of
// its own, with the settings below (sim_proc_linux_test.go seeds its
// runtime).

// simTempDir is a directory in memory (under /dev/shm) for the children's
// data dirs, removed when t ends, or "" where there is none. The few files
// a node keeps outside its raft log (identity, cluster record, snapshots)
// then cost no disk wait: a system call that waits lets the Go runtime
// hand the one P to another thread, which can reorder the goroutines that
// run next and so part two runs of one seed.
func simTempDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return ""
	}
	dir, err := os.MkdirTemp("/dev/shm", "holdfast-sim-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// simChildEnvs are the settings every seed's child runs with: one P
// (the bubble's goroutines then run one at a time, in an order only the
// program decides), no asynchronous preemption (a goroutine yields where
// it blocks or calls, not where a timer signal finds it), raft's global
// math/rand seedable (randseednop=0), and no garbage collection below
// 1 GiB of heap (a seed allocates about 100 MB; the collector's work,
// paced by the wall clock, and its assists, which can park a goroutine
// until the collector catches up, reordered the goroutines of one run
// against another: 79 of 90 replays of failing seeds failed the same way
// with the collector off, 70 of 90 with it on, for about the same CPU).
var simChildEnvs = []string{"GOMAXPROCS=1", "GODEBUG=randseednop=0,asyncpreemptoff=1", "GOGC=off", "GOMEMLIMIT=1GiB"}

// simRunChild runs seed in a child process that appends its result to out,
// and returns whether the child's runtime random source was fixed by the
// seed, its output, and how it exited.
func simRunChild(seed uint64, out, tmp string) (seeded bool, output string, err error) {
	args := []string{"-test.run=^TestSimulation$", "-test.count=1", "-test.timeout=0"}
	if *simBreakFlag != "" {
		args = append(args, "-sim.break="+*simBreakFlag)
	}
	if !*simLinStrict {
		args = append(args, "-sim.lin-strict=false")
	}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:1", simChildEnv, seed, seed+1), "HOLDFAST_SIM_RESULTS="+out)
	cmd.Env = append(cmd.Env, simChildEnvs...)
	if tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		if os.Getenv("HOLDFAST_SIM_OUT") == "" {
			// Visualizations outlive the child's TMPDIR (removed with the run).
			cmd.Env = append(cmd.Env, "HOLDFAST_SIM_OUT="+filepath.Join(os.TempDir(), "holdfast-sim"))
		}
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	seeded, err = simStartSeeded(cmd, seed)
	if err == nil {
		err = cmd.Wait()
	}
	return seeded, buf.String(), err
}

// simSeedLine is the line of a passing child's verbose output that sums
// its seed up (simulated time, faults, grants, the history checked).
func simSeedLine(seed uint64, output string) string {
	for line := range strings.Lines(output) {
		if strings.Contains(line, fmt.Sprintf("seed %d: ", seed)) && strings.Contains(line, " simulated, ") {
			return strings.TrimSpace(line)
		}
	}
	return fmt.Sprintf("seed %d: passed", seed)
}
