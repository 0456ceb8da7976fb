package storetest

import (
	"fmt"
	"testing"
)

// ProcessCrashes runs ops calls of a workload on a store on a MemFS and
// kills the process at random points (every few calls): the calls after
// the kill fail, but the MemFS keeps everything written, synced or not, as
// the kernel's page cache outlives a process. The store reopened on it
// must show what was acknowledged, plus at most what the interrupted call
// was writing, and nothing stale. And what it shows must be on disk by the
// time its Open returns, since raft acts on it at once (it acknowledges
// the entries it finds, and keeps to the vote it finds): a power cut right
// after that Open (under a random CrashMode) must leave a store showing
// exactly the same.
func ProcessCrashes(t testing.TB, seed uint64, open Opener, ops int, fig *Figures) {
	t.Helper()
	interrupted(t, seed, open, ops, fig, processCrash)
}

// processCrash is ProcessCrashes' stop.
func processCrash(t testing.TB, r *cutRun, op StoreOp, out Outcome, _ *unsynced) (*Model, error) {
	r.reopen(t, r.mem, "a process crash", op) // the same MemFS: nothing is lost
	obs, err := Observe(r.st)
	if err == nil {
		// An append acknowledged before its sync is in the page cache:
		// it shows like any acknowledged call.
		err = Check(obs, r.m, r.after, op, out)
	}
	if err != nil {
		return nil, fmt.Errorf("seed %d: a process crash during call %d %v (outcome %v): %w", r.seed, r.callNum, op, out, err)
	}
	restarted := obs.Model()
	mode := CrashMode(r.rng.IntN(int(crashModes)))
	cut := r.mem.Crash(r.rng, mode)
	st, err := r.open(NewFaultFS(cut))
	if err != nil {
		return nil, fmt.Errorf("seed %d: a power cut (%v) right after the restart that followed a process crash during call %d %v: the store refuses to open: %w",
			r.seed, mode, r.callNum, op, err)
	}
	defer st.Close()
	after, err := Observe(st)
	if err == nil {
		err = Check(after, restarted, restarted, StoreOp{}, Done)
	}
	if err != nil {
		return nil, fmt.Errorf("seed %d: a power cut (%v) right after the restart that followed a process crash during call %d %v: "+
			"what the restarted store showed was not on disk: %w", r.seed, mode, r.callNum, op, err)
	}
	r.fig.Restarts++
	r.fig.Modes[mode]++
	return restarted, nil
}
