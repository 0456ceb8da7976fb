package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Faults runs a workload of ops calls once to count its file system
// calls, then again for each call k with call k failing (EIO, then
// ENOSPC, then EIO on every call until the failing store call returns).
// After a failed store call the store must be exactly as before, live and
// after a restart, or refuse every later write (walog's Failed set) and
// show after a restart the call either done or not. Nothing the store
// reported as not stored may come back.
func Faults(t testing.TB, seed uint64, open Opener, ops int, fig *Figures) {
	t.Helper()
	n := faultRun(t, seed, open, ops, nil, fig)
	for k := 1; k <= n; k++ {
		for _, mode := range []string{"eio", "enospc", "eio-until-returned"} {
			var hit bool
			var rule Rule
			switch mode {
			case "eio", "enospc":
				err := EIO
				if mode == "enospc" {
					err = ENOSPC
				}
				rule = func(c Call) error {
					if c.N == k {
						return err
					}
					return nil
				}
			default:
				rule = func(c Call) error {
					if c.N >= k && !hit {
						return EIO
					}
					return nil
				}
			}
			faultRun(t, seed, open, ops, &faultPlan{rule: rule, name: fmt.Sprintf("%s at call %d", mode, k), heal: func() { hit = true }}, fig)
		}
	}
}

// faultPlan is one fault to inject: the rule, its name, and heal, called
// once the store call it failed has returned.
type faultPlan struct {
	rule Rule
	name string
	heal func()
}

// faultRun runs the workload under plan (nil: none) and returns how many
// file system calls it made.
func faultRun(t testing.TB, seed uint64, open Opener, ops int, plan *faultPlan, fig *Figures) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	ff := NewFaultFS(NewMemFS(0))
	st, err := open(ff)
	if err != nil {
		t.Fatalf("seed %d: opening a new store: %v", seed, err)
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	name := "no fault"
	if plan != nil {
		ff.SetRule(plan.rule)
		name = plan.name
	}
	m, w := NewModel(), NewWorkload(rng)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %s: %s", seed, name, fmt.Sprintf(format, args...))
	}
	for i := 0; i < ops; i++ {
		op := w.Next(m)
		after := m.Apply(op)
		before := total(ff.Injected())
		err := do(&st, op, open, ff)
		injected := total(ff.Injected()) > before
		if plan != nil && injected {
			plan.heal()
		}
		if !injected {
			if err != nil {
				fail("call %d %v: %v (no fault injected)", i, op, err)
			}
			m = after
			continue
		}
		for k, v := range ff.Injected() {
			fig.Faults[k] += v
		}
		ff.SetRule(nil)
		if err == nil {
			// The fault hit a call the store did not need (a leftover file's
			// removal): the call is done.
			checkLive(t, st, m, after, op, Done, fail, fig)
			m = after
			continue
		}
		w.Reset()
		poisoned := false
		if f, ok := st.(Failer); ok && f.Failed() != nil {
			poisoned = true
			fig.Poisoned++
			if err := (StoreOp{Kind: OpSet, Key: "CurrentTerm", Val: []byte("probe")}).Do(st); err == nil {
				fail("after %v failed with %v, the store reports Failed yet took a write", op, err)
			}
		} else if op.Kind != OpReopen {
			checkLive(t, st, m, after, op, NotDone, fail, fig)
		}
		// Restart: nothing the store reported as not stored may come back.
		st.Close()
		if st, err = open(ff); err != nil {
			fail("after %v failed, the store refuses to open: %v", op, err)
		}
		out := NotDone
		if poisoned || op.Kind == OpReopen {
			out = InFlight
		}
		obs := checkLive(t, st, m, after, op, out, fail, fig)
		m = obs.Model()
	}
	return ff.Calls()
}

// checkLive observes st and checks it against the outcome.
func checkLive(t testing.TB, st Store, before, after *Model, op StoreOp, out Outcome, fail func(string, ...any), fig *Figures) *Observed {
	t.Helper()
	obs, err := Observe(st)
	if err == nil {
		err = Check(obs, before, after, op, out)
	}
	if err != nil {
		fig.count(err)
		fail("after %v (outcome %v): %v", op, out, err)
	}
	return obs
}
