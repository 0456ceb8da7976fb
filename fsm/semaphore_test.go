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

// semHistory runs one seeded history of TestSemaphoreRandomHistories: 400
// steps, each a random acquire, release, session end (with a new session
// in its place) or duplicate of an earlier command, checked by
// semHist.check; a release by a session with no request yet, or a
// duplicate before any command was sent, skips the step unchecked.
func semHistory(t *testing.T, seed uint64) {
	t.Logf("seed %d", seed)
	h := &semHist{
		t:       t,
		rng:     rand.New(rand.NewPCG(seed, 7)),
		limits:  map[string]uint32{"x": 2, "y": 3},
		names:   []string{"x", "y"},
		live:    []string{"a", "b", "c", "d"},
		next:    map[string]uint64{},
		lastTok: map[string]uint64{},
	}
	h.a = newLeaseApplier(t, h.live...)
	for step := range 400 {
		before := h.a.f.View()
		snapBefore, _ := h.a.f.EncodeSnapshot()
		name := h.names[h.rng.IntN(len(h.names))]
		dup := false
		switch k := h.rng.IntN(10); {
		case k < 4:
			h.acquire(name)
		case k < 7:
			if !h.release(name) {
				continue
			}
		case k < 8:
			h.replaceSession()
			snapBefore, _ = h.a.f.EncodeSnapshot()
			before = h.a.f.View()
		default:
			if len(h.sent) == 0 {
				continue
			}
			dup = true
			h.a.do(h.sent[h.rng.IntN(len(h.sent))])
		}
		h.check(step, before, snapBefore, dup)
	}
}

// semHist is the state of one semHistory: its random source, the limit of
// each name, the live sessions (a, b, c, d at first), the last request
// number of each session, the count of replaced sessions, the semaphore
// commands sent, and the last token granted on each name.
type semHist struct {
	t       *testing.T
	rng     *rand.Rand
	limits  map[string]uint32
	names   []string
	live    []string
	a       *applier
	next    map[string]uint64
	gen     int
	sent    []Command
	lastTok map[string]uint64
}

// acquire applies, and records as sent, an acquire of name by a random
// live session with its next request number, waiting three times in four,
// with the name's limit (one more, one time in twenty).
func (h *semHist) acquire(name string) {
	s := h.live[h.rng.IntN(len(h.live))]
	h.next[s]++
	limit := h.limits[name]
	if h.rng.IntN(20) == 0 {
		limit++
	}
	c := semAcquire(s, name, h.next[s], limit, h.rng.IntN(4) != 0)
	h.sent = append(h.sent, c)
	h.a.do(c)
}

// release applies, and records as sent, a release of name by a random
// live session for one of its requests so far, with token 0 or (one time
// in four) a random token up to the last one granted. It returns false,
// applying nothing, when that session has made no request.
func (h *semHist) release(name string) bool {
	s := h.live[h.rng.IntN(len(h.live))]
	if h.next[s] == 0 {
		return false
	}
	req := 1 + h.rng.Uint64N(h.next[s])
	tok := uint64(0)
	if h.rng.IntN(4) == 0 {
		tok = h.rng.Uint64N(h.a.f.View().LastToken() + 1)
	}
	c := semRelease(s, name, req, tok)
	h.sent = append(h.sent, c)
	h.a.do(c)
	return true
}

// replaceSession closes or expires (even odds) a random live session and
// creates a new one, s1, s2, ..., in its place.
func (h *semHist) replaceSession() {
	i := h.rng.IntN(len(h.live))
	op := OpSessionClose
	if h.rng.IntN(2) == 0 {
		op = OpSessionExpire
	}
	h.a.do(Command{Op: op, Session: &SessionCmd{ID: h.live[i]}})
	h.gen++
	h.live[i] = fmt.Sprintf("s%d", h.gen)
	h.a.do(createSession(h.live[i]))
}

// check fails the test at step unless a duplicated command (dup) left the
// snapshot as it was (snapBefore) but for the index, and every semaphore
// keeps to its limit, has waiters only when full, grants new permits with
// tokens above the name's last one and serves its queue in order (against
// before). Every 50 steps it replaces the applier with a copy restored
// from the snapshot, which must encode the same.
func (h *semHist) check(step int, before *View, snapBefore []byte, dup bool) {
	t := h.t
	t.Helper()
	after := h.a.f.View()
	snapAfter, _ := h.a.f.EncodeSnapshot()
	if dup && !sameButIndex(snapBefore, snapAfter) {
		t.Fatalf("step %d: a duplicated command changed the state", step)
	}
	for _, s := range after.Semaphores() {
		if len(s.Holders) > int(s.Limit) || (len(s.Waiters) > 0 && len(s.Holders) != int(s.Limit)) {
			t.Fatalf("step %d: %+v", step, s)
		}
		for _, hd := range s.Holders {
			if _, ok := before.SemPermit(s.Name, hd.Session, hd.Request); ok {
				continue
			}
			if hd.Token <= h.lastTok[s.Name] {
				t.Fatalf("step %d: %s granted token %d after %d", step, s.Name, hd.Token, h.lastTok[s.Name])
			}
			h.lastTok[s.Name] = hd.Token
		}
		checkFIFO(t, step, before, s)
	}
	if step%50 == 0 {
		h.a = h.a.restoredCopy()
		if again, _ := h.a.f.EncodeSnapshot(); !bytes.Equal(again, snapAfter) {
			t.Fatalf("step %d: the restored snapshot encodes differently", step)
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
