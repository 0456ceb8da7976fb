package coordinator_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/internal/storetest"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// The nodes' disks in TestSimulation: each node's raft write-ahead log is
// kept on an in-memory file system (internal/storetest's MemFS, which knows
// what a power cut keeps) behind a fault layer (FaultFS); the rest of the
// data dir (identity, snapshots) is on the real disk. A disk outlives its
// node's restarts as a real one would. Two storage faults use it:
//
//   - "power-loss": the node dies and its log keeps only what a power cut
//     keeps (the unsynced writes lost, or a part of them, by a seeded
//     CrashMode); it must start again with every entry it acknowledged
//     (I9), or the run fails;
//   - "fsync-fail": the next syncs of the node's log fail (EIO); the node
//     must stop serving rather than acknowledge, and an operator restarts
//     it after a while.

// simDisk is one node's log disk: a MemFS behind a FaultFS, replaced
// whole by a power cut or a wipe.
type simDisk struct {
	mu  sync.Mutex
	mem *storetest.MemFS
	ffs *storetest.FaultFS
}

func newSimDisk() *simDisk {
	d := &simDisk{}
	d.set(storetest.NewMemFS(0))
	return d
}

func (d *simDisk) set(m *storetest.MemFS) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mem, d.ffs = m, storetest.NewFaultFS(m)
}

func (d *simDisk) fs() *storetest.FaultFS {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ffs
}

// powerCut replaces the disk by what a power cut now leaves.
func (d *simDisk) powerCut(rng *rand.Rand, mode storetest.CrashMode) {
	d.mu.Lock()
	m := d.mem
	d.mu.Unlock()
	d.set(m.Crash(rng, mode))
}

// The walog.FS methods go to the current fault layer.

func (d *simDisk) OpenFile(name string, flag int, perm os.FileMode) (walog.File, error) {
	return d.fs().OpenFile(name, flag, perm)
}
func (d *simDisk) Remove(name string) error                  { return d.fs().Remove(name) }
func (d *simDisk) Rename(oldpath, newpath string) error      { return d.fs().Rename(oldpath, newpath) }
func (d *simDisk) ReadDir(name string) ([]string, error)     { return d.fs().ReadDir(name) }
func (d *simDisk) Mkdir(name string, perm os.FileMode) error { return d.fs().Mkdir(name, perm) }
func (d *simDisk) Stat(name string) (fs.FileInfo, error)     { return d.fs().Stat(name) }
func (d *simDisk) SyncDir(name string) error                 { return d.fs().SyncDir(name) }

// simDiskFault injects a storage fault on victim.
func (s *simRun) simDiskFault(rng *rand.Rand, kind string, victim int) {
	r := s.chaosRun
	cl, h := r.cl, r.h
	switch kind {
	case "power-loss":
		mode := storetest.CrashMode(rng.IntN(4))
		f := h.addFault(fmt.Sprintf("power-loss(%s)", mode), r.touchedBy(victim))
		cl.Kill(victim)
		s.disks[victim].powerCut(rng, mode)
		pace(context.Background(), between(rng, 300*time.Millisecond, 2*time.Second))
		s.restart(victim)
		h.healFault(f)
	case "fsync-fail":
		f := h.addFault(kind, r.touchedBy(victim))
		failing := s.disks[victim].fs()
		failing.SetRule(func(c storetest.Call) error {
			if c.Op == storetest.OpSync {
				return storetest.EIO
			}
			return nil
		})
		pace(context.Background(), between(rng, 200*time.Millisecond, 2*time.Second))
		// The operator notices and restarts the node on a working disk.
		cl.Kill(victim)
		failing.SetRule(nil)
		pace(context.Background(), between(rng, 100*time.Millisecond, time.Second))
		s.restart(victim)
		h.healFault(f)
	}
}
