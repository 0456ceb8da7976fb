package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func semAcquire(session, name string, req uint64, limit uint32, wait bool) Command {
	return Command{Op: OpSemAcquire, Sem: &SemCmd{Name: name, Session: session, Request: req, Limit: limit, Wait: wait}}
}

func semRelease(session, name string, req, token uint64) Command {
	return Command{Op: OpSemRelease, Sem: &SemCmd{Name: name, Session: session, Request: req, Token: token}}
}

func TestSemaphoreGrantQueueRelease(t *testing.T) {
	a := newLeaseApplier(t, "a", "b", "c", "d")
	r1 := a.do(semAcquire("a", "s", 1, 2, true))
	r2 := a.do(semAcquire("b", "s", 1, 2, true))
	if r1.Err != nil || r2.Err != nil || r1.Queued || r2.Queued || r2.Token <= r1.Token {
		t.Fatalf("first two acquires: %+v %+v", r1, r2)
	}
	if r := a.do(semAcquire("d", "s", 1, 2, false)); !errors.Is(r.Err, ErrSemFull) {
		t.Fatalf("a non-waiting acquire of a full semaphore: %+v", r)
	}
	if r := a.do(semAcquire("c", "s", 1, 3, true)); !errors.Is(r.Err, ErrSemLimit) {
		t.Fatalf("an acquire with another limit: %+v", r)
	}
	if r := a.do(semAcquire("c", "s", 2, 2, true)); !r.Queued {
		t.Fatalf("c not queued: %+v", r)
	}
	if r := a.do(semAcquire("d", "s", 2, 2, true)); !r.Queued {
		t.Fatalf("d not queued: %+v", r)
	}
	if r := a.do(semAcquire("a", "s", 1, 2, true)); !r.Noop || r.Token != r1.Token {
		t.Fatalf("a retried acquire is not answered again: %+v", r)
	}
	a.do(semRelease("b", "s", 1, 0))
	tok, ok := a.f.View().SemPermit("s", "c", 2)
	if !ok || tok <= r2.Token {
		t.Fatalf("c (first waiter) not granted after b's release: %v %d", ok, tok)
	}
	if _, ok := a.f.View().SemPermit("s", "d", 2); ok {
		t.Fatal("d granted out of turn")
	}
	a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: "a"}})
	s, _ := a.f.View().Semaphore("s")
	if len(s.Holders) != 2 || s.Holders[0].Session != "c" || s.Holders[1].Session != "d" || len(s.Waiters) != 0 {
		t.Fatalf("after a's expiry: %+v", s)
	}
	a.do(semRelease("c", "s", 2, 0))
	a.do(semRelease("d", "s", 2, 0))
	if _, ok := a.f.View().Semaphore("s"); ok {
		t.Fatal("an empty semaphore is kept")
	}
	// Free again: the limit is the next acquire's.
	if r := a.do(semAcquire("c", "s", 3, 5, false)); r.Err != nil {
		t.Fatal(r.Err)
	}
}

func TestSemaphoreBadInput(t *testing.T) {
	a := newLeaseApplier(t, "a")
	for _, c := range []Command{
		semAcquire("a", "", 1, 1, true), semAcquire("a", "s", 0, 1, true), semAcquire("a", "s", 1, 0, true),
		semAcquire("a", "s", 1, MaxSemLimit+1, true), semAcquire("nobody", "s", 1, 1, true),
		semRelease("a", "s", 0, 0), semRelease("a", "", 1, 0),
	} {
		before, _ := a.f.EncodeSnapshot()
		if r := a.do(c); r.Err == nil {
			t.Errorf("%+v accepted", *c.Sem)
		}
		if after, _ := a.f.EncodeSnapshot(); !sameButIndex(before, after) {
			t.Errorf("%+v changed the state", *c.Sem)
		}
	}
	if _, err := Decode([]byte{CommandVersion, byte(OpSemAcquire), 0xc1}); err == nil {
		t.Error("a malformed body decoded")
	}
}

// sameButIndex reports whether two snapshots differ at most in their index.
func sameButIndex(a, b []byte) bool {
	da, ea := decodeSnapshot(a)
	db, eb := decodeSnapshot(b)
	if ea != nil || eb != nil {
		return false
	}
	da.Index, db.Index = 0, 0
	x, _ := encodeSnapshot(da)
	y, _ := encodeSnapshot(db)
	return bytes.Equal(x, y)
}

// TestSemaphoreRandomHistories applies random histories of semaphore
// commands, session ends and duplicated copies of earlier commands, and
// checks after every command: at most Limit holders per name, a waiter
// only when every permit is held, tokens strictly increasing per name, the
// queue served first come first, a duplicated command changing nothing,
// and the snapshot round trip.
func TestSemaphoreRandomHistories(t *testing.T) {
	for seed := range randomSeeds(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { semHistory(t, seed) })
	}
}

func semHistory(t *testing.T, seed uint64) {
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	limits := map[string]uint32{"x": 2, "y": 3}
	names := []string{"x", "y"}
	live := []string{"a", "b", "c", "d"}
	a := newLeaseApplier(t, live...)
	next := map[string]uint64{}
	gen := 0
	var sent []Command
	lastTok := map[string]uint64{}
	for step := range 400 {
		before := a.f.View()
		snapBefore, _ := a.f.EncodeSnapshot()
		name := names[rng.IntN(len(names))]
		dup := false
		switch k := rng.IntN(10); {
		case k < 4:
			s := live[rng.IntN(len(live))]
			next[s]++
			limit := limits[name]
			if rng.IntN(20) == 0 {
				limit++
			}
			c := semAcquire(s, name, next[s], limit, rng.IntN(4) != 0)
			sent = append(sent, c)
			a.do(c)
		case k < 7:
			s := live[rng.IntN(len(live))]
			if next[s] == 0 {
				continue
			}
			req := 1 + rng.Uint64N(next[s])
			tok := uint64(0)
			if rng.IntN(4) == 0 {
				tok = rng.Uint64N(a.f.View().LastToken() + 1)
			}
			c := semRelease(s, name, req, tok)
			sent = append(sent, c)
			a.do(c)
		case k < 8:
			i := rng.IntN(len(live))
			op := OpSessionClose
			if rng.IntN(2) == 0 {
				op = OpSessionExpire
			}
			a.do(Command{Op: op, Session: &SessionCmd{ID: live[i]}})
			gen++
			live[i] = fmt.Sprintf("s%d", gen)
			a.do(createSession(live[i]))
			snapBefore, _ = a.f.EncodeSnapshot()
			before = a.f.View()
		default:
			if len(sent) == 0 {
				continue
			}
			dup = true
			a.do(sent[rng.IntN(len(sent))])
		}
		after := a.f.View()
		snapAfter, _ := a.f.EncodeSnapshot()
		if dup && !sameButIndex(snapBefore, snapAfter) {
			t.Fatalf("step %d: a duplicated command changed the state", step)
		}
		for _, s := range after.Semaphores() {
			if len(s.Holders) > int(s.Limit) || (len(s.Waiters) > 0 && len(s.Holders) != int(s.Limit)) {
				t.Fatalf("step %d: %+v", step, s)
			}
			for _, h := range s.Holders {
				if _, ok := before.SemPermit(s.Name, h.Session, h.Request); ok {
					continue
				}
				if h.Token <= lastTok[s.Name] {
					t.Fatalf("step %d: %s granted token %d after %d", step, s.Name, h.Token, lastTok[s.Name])
				}
				lastTok[s.Name] = h.Token
			}
			checkFIFO(t, step, before, s)
		}
		if step%50 == 0 {
			a = a.restoredCopy()
			if again, _ := a.f.EncodeSnapshot(); !bytes.Equal(again, snapAfter) {
				t.Fatalf("step %d: the restored snapshot encodes differently", step)
			}
		}
	}
}

// checkFIFO checks that the waiters of s's previous state that were
// granted, and those still waiting, keep their order: every one granted
// came before every one still waiting.
func checkFIFO(t *testing.T, step int, before *View, s Semaphore) {
	t.Helper()
	old, ok := before.Semaphore(s.Name)
	if !ok {
		return
	}
	lastGranted, firstWaiting := -1, len(old.Waiters)
	for i, w := range old.Waiters {
		if s.holderOf(w.Session, w.Request) >= 0 {
			lastGranted = i
		} else if s.waiterOf(w.Session, w.Request) >= 0 && i < firstWaiting {
			firstWaiting = i
		}
	}
	if lastGranted > firstWaiting {
		t.Fatalf("step %d: %s granted waiter %d before waiter %d", step, s.Name, lastGranted, firstWaiting)
	}
	var kept []Waiter
	for _, w := range old.Waiters {
		if s.waiterOf(w.Session, w.Request) >= 0 {
			kept = append(kept, w)
		}
	}
	if !slices.Equal(kept, s.Waiters[:len(kept)]) {
		t.Fatalf("step %d: %s reordered its queue: %v then %v", step, s.Name, old.Waiters, s.Waiters)
	}
}

func TestSemaphoreSnapshotRoundTrip(t *testing.T) {
	a := newLeaseApplier(t, "a", "b", "c")
	a.do(semAcquire("a", "s", 1, 1, true))
	a.do(semAcquire("b", "s", 1, 1, true))
	a.do(semAcquire("c", "t", 1, 3, true))
	b1, _ := a.f.EncodeSnapshot()
	r := a.restoredCopy()
	b2, _ := r.f.EncodeSnapshot()
	if !bytes.Equal(b1, b2) {
		t.Fatal("snapshot round trip differs")
	}
	// The restored replica serves the queue the same way.
	r.do(semRelease("a", "s", 1, 0))
	if _, ok := r.f.View().SemPermit("s", "b", 1); !ok {
		t.Fatal("restored queue not served")
	}
	if s, _ := r.f.View().Session("b"); s.semMark("s") != 1 {
		t.Fatalf("restored semaphore marks: %+v", s.SemMarks)
	}
}

// FuzzSemaphoreHistories runs the random histories of
// TestSemaphoreRandomHistories from fuzzed seeds.
func FuzzSemaphoreHistories(f *testing.F) {
	f.Add(uint64(1))
	f.Add(uint64(1 << 40))
	f.Fuzz(func(t *testing.T, seed uint64) { semHistory(t, seed) })
}

// TestGoldenSemaphoreSnapshot pins the encoding of semaphores in a
// snapshot (holders, waiters, limits and the sessions' semaphore request
// marks) to testdata/snapshot-sem.golden, and checks that it restores to
// the same bytes.
func TestGoldenSemaphoreSnapshot(t *testing.T) {
	a := newLeaseApplier(t, "a", "b", "c")
	a.do(acquire("a", "l", 1, false))
	a.do(semAcquire("a", "s", 2, 2, true))
	a.do(semAcquire("b", "s", 1, 2, true))
	a.do(semAcquire("c", "s", 4, 2, true))
	a.do(semAcquire("c", "t", 5, 1, true))
	b, err := a.f.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "snapshot-sem.golden")
	if *updateGolden {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pinned, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, pinned) {
		t.Fatal("semaphores now encode differently from testdata/snapshot-sem.golden")
	}
	r := New()
	if err := r.Restore(io.NopCloser(bytes.NewReader(pinned))); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.EncodeSnapshot(); !bytes.Equal(again, pinned) {
		t.Fatal("the restored semaphore snapshot encodes differently")
	}
	if s, ok := r.View().Semaphore("s"); !ok || s.Limit != 2 || len(s.Holders) != 2 || len(s.Waiters) != 1 {
		t.Fatalf("semaphore s restored as %+v", s)
	}
}
