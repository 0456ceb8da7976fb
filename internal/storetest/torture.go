package storetest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// debug logs every call of a run (HOLDFAST_STORE_DEBUG=1).
var debug = os.Getenv("HOLDFAST_STORE_DEBUG") == "1"

// Opener opens the store under test on fsys, in the same directory each
// time.
type Opener func(fsys walog.FS) (Store, error)

// Failer is a store that reports the failure that makes it refuse every
// later write (walog.Log), nil while it takes writes.
type Failer interface{ Failed() error }

// Figures count what the torture runs tried, for the closing report.
type Figures struct {
	Ops         int
	CrashPoints int
	Modes       map[CrashMode]int
	Faults      map[Op]int
	Poisoned    int // faults after which the store refused every write
	DiskFull    int // calls failed by a full disk
	Corruptions int
	Refused     int // corrupt stores that refused to open
	Recovered   int // corrupt stores that opened, showing the right entries
	Lost, Stale int // always 0, or the run failed
	Deferred    int // appends acknowledged before their sync (walog's DeferSync)
	Restarts    int // process crashes, each restarted and then power cut (ProcessCrashes)
}

// NewFigures returns zero figures.
func NewFigures() *Figures {
	return &Figures{Modes: map[CrashMode]int{}, Faults: map[Op]int{}}
}

// Add adds o's counts to f.
func (f *Figures) Add(o *Figures) {
	f.Ops += o.Ops
	f.CrashPoints += o.CrashPoints
	f.Poisoned += o.Poisoned
	f.DiskFull += o.DiskFull
	f.Corruptions += o.Corruptions
	f.Refused += o.Refused
	f.Recovered += o.Recovered
	f.Lost += o.Lost
	f.Stale += o.Stale
	f.Deferred += o.Deferred
	f.Restarts += o.Restarts
	for k, v := range o.Modes {
		f.Modes[k] += v
	}
	for k, v := range o.Faults {
		f.Faults[k] += v
	}
}

// String is the figures in one line.
func (f *Figures) String() string {
	var modes, faults []string
	for m := range crashModes {
		if n := f.Modes[m]; n > 0 {
			modes = append(modes, fmt.Sprintf("%v %d", m, n))
		}
	}
	for op, n := range f.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(faults)
	total := 0
	for _, n := range f.Faults {
		total += n
	}
	return fmt.Sprintf("%d calls (%d appends acknowledged before their sync); %d power cuts and %d process crashes (%s); %d I/O faults injected (%s), %d left the store refusing writes; "+
		"%d calls failed by a full disk; %d corruptions: %d refused, %d recovered; %d acknowledged entries lost, %d stale entries returned",
		f.Ops, f.Deferred, f.CrashPoints, f.Restarts, strings.Join(modes, ", "), total, strings.Join(faults, ", "), f.Poisoned,
		f.DiskFull, f.Corruptions, f.Refused, f.Recovered, f.Lost, f.Stale)
}

// count records a check's failure kind.
func (f *Figures) count(err error) {
	switch {
	case errors.Is(err, ErrLost):
		f.Lost++
	case errors.Is(err, ErrStale):
		f.Stale++
	}
}

// do runs op on *st (a reopen closes it and opens another).
func do(st *Store, op StoreOp, open Opener, fsys walog.FS) error {
	if op.Kind != OpReopen {
		return op.Do(*st)
	}
	if err := (*st).Close(); err != nil {
		return err
	}
	s, err := open(fsys)
	if err != nil {
		return err
	}
	*st = s
	return nil
}

// PowerCuts runs ops calls of a workload on a store on a MemFS and cuts
// the power at random points (every few calls): the calls after the cut
// fail, the MemFS keeps what a CrashMode says, and the store reopened on
// it must show what was acknowledged, plus at most what the interrupted
// call was writing, nothing stale, and never refuse to open.
func PowerCuts(t testing.TB, seed uint64, open Opener, ops int, fig *Figures) {
	t.Helper()
	interrupted(t, seed, open, ops, fig, powerCut)
}

// A stop is what a run does at a fault: it brings up a new store (cutRun's
// reopen) on what the file system keeps, and checks what the store shows
// after op (outcome out; pend is an append acknowledged before its sync,
// if one is still unsynced). It returns the model the workload goes on
// from, or an error wrapping ErrLost or ErrStale.
type stop func(t testing.TB, r *cutRun, op StoreOp, out Outcome, pend *unsynced) (*Model, error)

// cutRun is the state of one PowerCuts or ProcessCrashes run.
type cutRun struct {
	seed    uint64
	rng     *rand.Rand
	open    Opener
	mem     *MemFS
	ff      *FaultFS
	st      Store
	m       *Model
	after   *Model
	fig     *Figures
	callNum int
}

// interrupted runs ops calls of a workload, stopping it (powerCut or
// processCrash) at a random call every few calls.
func interrupted(t testing.TB, seed uint64, open Opener, ops int, fig *Figures, stopAt stop) {
	t.Helper()
	r := &cutRun{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), open: open, mem: NewMemFS(0), fig: fig}
	r.ff = NewFaultFS(r.mem)
	var err error
	if r.st, err = open(r.ff); err != nil {
		t.Fatalf("seed %d: opening a new store: %v", seed, err)
	}
	defer func() {
		if r.st != nil {
			r.st.Close()
		}
	}()
	w := NewWorkload(r.rng)
	r.m = NewModel()
	arm := func() {
		cut := r.ff.Calls() + 1 + r.rng.IntN(24)
		r.ff.SetRule(func(c Call) error {
			if c.N > cut {
				return ErrPowerCut
			}
			return nil
		})
	}
	arm()
	var pend *unsynced
	for i := 0; i < ops; i++ {
		op := w.Next(r.m)
		r.after = r.m.Apply(op)
		hits := total(r.ff.Injected())
		err := do(&r.st, op, open, r.ff)
		fig.Ops++
		if debug {
			t.Logf("call %d %v: %v (calls %d, injected %d)", i, op, err, r.ff.Calls(), total(r.ff.Injected())-hits)
		}
		if total(r.ff.Injected()) == hits {
			if err != nil {
				t.Fatalf("seed %d, call %d %v: %v (no fault injected)", seed, i, op, err)
			}
			pend = pend.next(r.st, r.m, r.after, op, fig)
			r.m = r.after
			continue
		}
		out := InFlight
		if err == nil {
			out = Done
		}
		r.callNum = i
		if r.m, err = stopAt(t, r, op, out, pend); err != nil {
			fig.count(err)
			t.Fatal(err)
		}
		pend = nil
		w.Reset()
		arm()
	}
}

// reopen closes the store (its calls fail: the file system is dead, so
// nothing reaches it) and opens one on fsys, which must succeed.
func (r *cutRun) reopen(t testing.TB, fsys *MemFS, what string, op StoreOp) {
	t.Helper()
	r.st.Close()
	r.st = nil
	r.mem, r.ff = fsys, NewFaultFS(fsys)
	st, err := r.open(r.ff)
	if err != nil {
		if debug {
			dumpCorrupt(t, fsys, err)
		}
		t.Fatalf("seed %d: %s during call %d %v: the store refuses to open: %v", r.seed, what, r.callNum, op, err)
	}
	r.st = st
}

// powerCut is PowerCuts' stop: the MemFS keeps what a random CrashMode
// says, and the store reopened on it shows the acknowledged calls, plus
// at most the interrupted one (and an append acknowledged before its sync
// that no later write synced: the cut may lose or tear it).
func powerCut(t testing.TB, r *cutRun, op StoreOp, out Outcome, pend *unsynced) (*Model, error) {
	mode := CrashMode(r.rng.IntN(int(crashModes)))
	r.reopen(t, r.mem.Crash(r.rng, mode), fmt.Sprintf("a power cut (%v)", mode), op)
	obs, err := Observe(r.st)
	if err == nil {
		err = Check(obs, r.m, r.after, op, out)
	}
	if err != nil && pend != nil && Check(obs, pend.before, pend.after, pend.op, InFlight) == nil {
		err = nil // the unsynced append was lost or torn: the cut came before the next write synced it
	}
	if err != nil {
		return nil, fmt.Errorf("seed %d: a power cut (%v) during call %d %v (outcome %v): %w", r.seed, mode, r.callNum, op, out, err)
	}
	r.fig.CrashPoints++
	r.fig.Modes[mode]++
	return obs.Model(), nil
}

// unsynced is an append a store acknowledged before syncing it (walog with
// Options.DeferSync): until a later write syncs it, a power cut may lose or
// tear it as if it were in flight, and the calls after it wrote nothing.
type unsynced struct {
	before, after *Model
	op            StoreOp
}

// next is what remains unsynced after op took the model from m to after
// without a fault: op itself if st acknowledged it unsynced (its Durable is
// short of after.Last), the earlier one if still unsynced, else nothing.
func (u *unsynced) next(st Store, m, after *Model, op StoreOp, fig *Figures) *unsynced {
	d, ok := st.(interface{ Durable() uint64 })
	switch {
	case !ok || d.Durable() >= after.Last:
		return nil
	case op.Kind == OpStoreLogs:
		fig.Deferred++
		return &unsynced{before: m, after: after, op: op}
	}
	return u
}

func total(m map[Op]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// DiskFull runs a workload on a MemFS whose capacity is now and then
// lowered to just above what the store uses (a disk filling up) and
// raised again (space freed). A call the full disk fails must fail with
// ENOSPC, leave the store as before and never make it refuse later writes:
// once space is free the store goes on without a restart. A stable key's
// write never fails for lack of space.
func DiskFull(t testing.TB, seed uint64, open Opener, ops int, fig *Figures) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	mem := NewMemFS(0)
	st, err := open(mem)
	if err != nil {
		t.Fatalf("seed %d: opening a new store: %v", seed, err)
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	m, w := NewModel(), NewWorkload(rng)
	for i := 0; i < ops; i++ {
		switch i % 24 {
		case 8:
			mem.SetCapacity(mem.Used() + int64(rng.IntN(6000)))
		case 20:
			mem.SetCapacity(0)
		}
		op := w.Next(m)
		if op.Kind == OpReopen {
			op = w.batch(max(m.Last, 0) + 1)
			if m.Last == 0 {
				op = w.batch(1)
			}
		}
		after := m.Apply(op)
		err := op.Do(st)
		fig.Ops++
		if err == nil {
			m = after
			continue
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, call %d %v on a full disk (%d of %d bytes used): %s", seed, i, op, mem.Used(), mem.capacity, fmt.Sprintf(format, args...))
		}
		switch {
		case !errors.Is(err, ENOSPC):
			fail("failed with %v, not ENOSPC", err)
		case op.Kind == OpSet:
			fail("a stable key's write failed for lack of space: %v", err)
		}
		if f, ok := st.(Failer); ok && f.Failed() != nil {
			fail("the full disk made the store refuse every later write: %v", f.Failed())
		}
		fig.DiskFull++
		checkLive(t, st, m, after, op, NotDone, fail, fig)
		w.Reset()
	}
	mem.SetCapacity(0)
	op := w.batch(m.Last + 1)
	if err := op.Do(st); err != nil {
		t.Fatalf("seed %d: an append once space was freed: %v", seed, err)
	}
	m = m.Apply(op)
	st.Close()
	if st, err = open(mem); err != nil {
		t.Fatalf("seed %d: reopening after the full disk: %v", seed, err)
	}
	checkLive(t, st, m, m, StoreOp{Kind: OpReopen}, Done, func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, reopened after the full disk: %s", seed, fmt.Sprintf(format, args...))
	}, fig)
}

// dumpCorrupt logs the bytes around a CorruptError's offset (debug runs).
func dumpCorrupt(t testing.TB, mem *MemFS, err error) {
	var ce *walog.CorruptError
	if !errors.As(err, &ce) || ce.Offset < 0 {
		return
	}
	f, ferr := mem.OpenFile(ce.Path, os.O_RDONLY, 0)
	if ferr != nil {
		return
	}
	defer f.Close()
	size, _ := f.Size()
	from := max(ce.Offset-64, 0)
	b := make([]byte, min(size-from, 1200))
	f.ReadAt(b, from)
	t.Logf("%s (%d bytes) from offset %d:\n%s", ce.Path, size, from, hex.Dump(b))
}
