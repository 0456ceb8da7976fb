package storetest

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// seeds returns the seeds a randomized test runs: n by default (a quarter
// with -short, as under the race detector in CI), more with
// HOLDFAST_STORE_SEEDS=n, one with HOLDFAST_STORE_SEED=s (replay).
func seeds(t *testing.T, n int) []uint64 {
	if testing.Short() {
		n = max(1, n/4)
	}
	if s, err := strconv.Atoi(os.Getenv("HOLDFAST_STORE_SEEDS")); err == nil && s > 0 {
		n = s
	}
	base := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("HOLDFAST_STORE_SEED"), 10, 64); err == nil {
		base, n = s, 1
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)
	}
	t.Logf("seeds %d..%d; replay one with HOLDFAST_STORE_SEED=<seed> go test ./internal/storetest -run %s", out[0], out[n-1], t.Name())
	return out
}

// shortly is n, or a third of it with -short.
func shortly(n int) int {
	if testing.Short() {
		return max(1, n/3)
	}
	return n
}

// walogOn opens a walog in /data/raft/wal of fsys, with small segments so
// that a run rotates, compacts and deletes many of them.
func walogOn(segSize int64) Opener {
	return func(fsys walog.FS) (Store, error) {
		l, err := walog.Open("/data/raft/wal", walog.Options{SegmentSize: segSize, FS: fsys})
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// deferredWalogOn is walogOn with the sync of two appends in three
// deferred (walog.Options.DeferSync, as a raft leader's): such an append
// returns unsynced, and the next write syncs it first. No goroutine syncs
// it meanwhile (Options.Deferred is unset), so a seed replays exactly.
func deferredWalogOn(segSize int64) Opener {
	return func(fsys walog.FS) (Store, error) {
		l, err := walog.Open("/data/raft/wal", walog.Options{SegmentSize: segSize, FS: fsys,
			DeferSync: func(logs []*raft.Log) bool { return logs[0].Index%3 != 0 }})
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// figures collects a test's figures and logs them at its end.
func figures(t *testing.T) *Figures {
	f := NewFigures()
	t.Cleanup(func() { t.Logf("walog: %v", f) })
	return f
}

// parallelSeeds runs run for each seed on two goroutines, adding up the
// figures.
func parallelSeeds(t *testing.T, ss []uint64, fig *Figures, run func(t *testing.T, seed uint64, f *Figures)) {
	eachSeed(t, ss, fig, true, run)
}

// eachSeed runs run for each seed, in parallel or one after the other
// (a run that measures the process's allocations must run alone: another
// seed's allocations would count as its own), adding up the figures.
func eachSeed(t *testing.T, ss []uint64, fig *Figures, parallel bool, run func(t *testing.T, seed uint64, f *Figures)) {
	var mu sync.Mutex
	for _, seed := range ss {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			f := NewFigures()
			run(t, seed, f)
			mu.Lock()
			fig.Add(f)
			mu.Unlock()
		})
	}
}

// interruptions runs run (PowerCuts or ProcessCrashes) over n seeds, each
// on a walog with segments of 512 to 2,612 bytes (by seed) and, when
// deferred is set, two appends in three acknowledged before their sync (a
// raft leader's); such a run fails if no append was.
func interruptions(t *testing.T, n int, deferred bool, run func(testing.TB, uint64, Opener, int, *Figures)) {
	fig := figures(t)
	on := walogOn
	if deferred {
		on = deferredWalogOn
	}
	t.Run("seeds", func(t *testing.T) {
		parallelSeeds(t, seeds(t, n), fig, func(t *testing.T, seed uint64, f *Figures) {
			run(t, seed, on(int64(512+seed%4*700)), 600, f)
		})
	})
	if deferred && fig.Deferred == 0 {
		t.Fatal("no append was acknowledged before its sync")
	}
}

// TestPowerCuts: thousands of power cuts at random calls of a raft-like
// workload, each reopened under one of the crash modes: the store always
// opens, with every acknowledged entry and key, nothing stale.
func TestPowerCuts(t *testing.T) { interruptions(t, 24, false, PowerCuts) }

// TestPowerCutsDeferredSync is TestPowerCuts with most appends
// acknowledged before their sync: a cut before the next write may lose or
// tear such an append (it was not on disk), never anything before it, and
// the store still always opens.
func TestPowerCutsDeferredSync(t *testing.T) { interruptions(t, 16, true, PowerCuts) }

// TestProcessCrashes: thousands of process crashes at random calls, each
// restarted on what the page cache kept (every write, synced or not), then
// cut from power right after the restart's Open: the restarted store shows
// what was acknowledged and nothing stale, and the power cut takes nothing
// of what it showed.
func TestProcessCrashes(t *testing.T) { interruptions(t, 12, false, ProcessCrashes) }

// TestProcessCrashesDeferredSync is TestProcessCrashes with most appends
// acknowledged before their sync: a process crash leaves such an append in
// the page cache, the restarted store shows it, and so it must be on disk
// once the restart's Open returns.
func TestProcessCrashesDeferredSync(t *testing.T) { interruptions(t, 12, true, ProcessCrashes) }

// TestInjectedFaults: EIO and ENOSPC injected at every file system call of
// a workload, once and until the failing call returns.
func TestInjectedFaults(t *testing.T) {
	fig := figures(t)
	t.Run("seeds", func(t *testing.T) {
		parallelSeeds(t, seeds(t, 2), fig, func(t *testing.T, seed uint64, f *Figures) {
			Faults(t, seed, walogOn(700), shortly(60), f)
		})
	})
}

// TestDiskFull: a disk that fills and frees again, many times per run.
func TestDiskFull(t *testing.T) {
	fig := figures(t)
	t.Run("seeds", func(t *testing.T) {
		parallelSeeds(t, seeds(t, 8), fig, func(t *testing.T, seed uint64, f *Figures) {
			DiskFull(t, seed, walogOn(1024), 400, f)
		})
	})
}

// TestCorruptions: every file of closed stores damaged in every way, one
// at a time. Its seeds run one after the other: each open of a damaged
// store checks what the process allocated meanwhile.
func TestCorruptions(t *testing.T) {
	fig := figures(t)
	t.Run("seeds", func(t *testing.T) {
		eachSeed(t, seeds(t, 4), fig, false, func(t *testing.T, seed uint64, f *Figures) {
			Corruptions(t, seed, walogOn(int64(600+seed%3*900)), "/data/raft/wal", 60, f)
		})
	})
}

// TestBoundedMemoryOnOpen: segments of random bytes, with record lengths
// up to 4 GiB, never make Open allocate more than a bound.
func TestBoundedMemoryOnOpen(t *testing.T) {
	fig := figures(t)
	for _, seed := range seeds(t, 1) {
		GarbageOpens(t, seed, walogOn(1<<20), "/data/raft/wal", shortly(400), fig)
	}
}
