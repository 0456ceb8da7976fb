package storetest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// DirOpener opens the store under test in a real directory (the same one
// each time).
type DirOpener func(dir string) (Store, error)

// Conformance checks the semantics raft relies on, on a store in a real
// directory: an empty store; entries read back exactly (type, data,
// extensions, append time); a prefix, a suffix and everything deleted;
// everything kept across a reopen; the stable keys; reads during writes;
// and a random workload with reopens checked against the model after
// every call.
func Conformance(t *testing.T, open DirOpener, seed uint64) {
	c := conformance{open: open, seed: seed}
	t.Run("empty", c.empty)
	t.Run("entries, deletions and reopens", c.entries)
	t.Run("stable keys", c.stable)
	t.Run("reads during writes", func(t *testing.T) { readsDuringWrites(t, c.reopen(t, t.TempDir(), nil)) })
	t.Run("random workload", c.random)
}

// conformance is one Conformance run: the store's opener and the seed.
type conformance struct {
	open DirOpener
	seed uint64
}

// reopen closes s (if any) and opens the store in dir again.
func (c conformance) reopen(t *testing.T, dir string, s Store) Store {
	t.Helper()
	if s != nil {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (c conformance) empty(t *testing.T) {
	s := c.reopen(t, t.TempDir(), nil)
	first, err1 := s.FirstIndex()
	last, err2 := s.LastIndex()
	var l raft.Log
	if first != 0 || last != 0 || err1 != nil || err2 != nil || !errors.Is(s.GetLog(1, &l), raft.ErrLogNotFound) {
		t.Fatalf("an empty store: %d..%d (%v, %v), GetLog(1) %v", first, last, err1, err2, s.GetLog(1, &l))
	}
	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("an unset key: %v, want an error reading \"not found\"", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); v != 0 || err == nil {
		t.Fatalf("an unset number: %d, %v", v, err)
	}
}

// do1 makes op on s, failing t on an error, and returns the model after
// it.
func do1(t *testing.T, s Store, m *Model, op StoreOp) *Model {
	t.Helper()
	if err := op.Do(s); err != nil {
		t.Fatalf("%v: %v", op, err)
	}
	return m.Apply(op)
}

func (c conformance) entries(t *testing.T) {
	dir := t.TempDir()
	s := c.reopen(t, dir, nil)
	w := NewWorkload(rand.New(rand.NewPCG(c.seed, 1)))
	m := NewModel()
	for range 6 {
		m = do1(t, s, m, w.batch(m.Last+1))
	}
	var one raft.Log
	if err := s.GetLog(m.Last+1, &one); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog past the end: %v, want ErrLogNotFound", err)
	}
	for _, op := range []StoreOp{
		{Kind: OpDeleteSuffix, Min: m.Last - 1, Max: m.Last},
		{Kind: OpDeletePrefix, Min: 1, Max: 3},
	} {
		m = do1(t, s, m, op)
		s = c.reopen(t, dir, s)
		checkNow(t, s, m)
	}
	m = do1(t, s, m, w.batch(m.Last+1))
	m = do1(t, s, m, StoreOp{Kind: OpDeleteAll, Min: m.First, Max: m.Last})
	checkNow(t, s, m)
	m = do1(t, s, m, w.batch(1000)) // anywhere after deleting everything
	s = c.reopen(t, dir, s)
	checkNow(t, s, m)
}

func (c conformance) stable(t *testing.T) {
	dir := t.TempDir()
	s := c.reopen(t, dir, nil)
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-7")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 43); err != nil {
		t.Fatal(err)
	}
	s = c.reopen(t, dir, s)
	term, err := s.GetUint64([]byte("CurrentTerm"))
	cand, err2 := s.Get([]byte("LastVoteCand"))
	if term != 43 || err != nil || !bytes.Equal(cand, []byte("node-7")) || err2 != nil {
		t.Fatalf("reopened: term %d (%v), vote %q (%v); want 43, node-7", term, err, cand, err2)
	}
}

func (c conformance) random(t *testing.T) {
	dir := t.TempDir()
	s := c.reopen(t, dir, nil)
	rng := rand.New(rand.NewPCG(c.seed, 2))
	w, m := NewWorkload(rng), NewModel()
	for i := range 300 {
		op := w.Next(m)
		if op.Kind == OpReopen {
			s = c.reopen(t, dir, s)
		} else if err := op.Do(s); err != nil {
			t.Fatalf("seed %d, call %d %v: %v", c.seed, i, op, err)
		}
		m = m.Apply(op)
		obs := checkNow(t, s, m)
		m = obs.Model().withCompacted(m)
	}
}

// withCompacted keeps o's compacted entries in m (they may show again).
func (m *Model) withCompacted(o *Model) *Model {
	for k, v := range o.Compacted {
		m.Compacted[k] = v
	}
	return m
}

// checkNow checks that s shows m.
func checkNow(t *testing.T, s Store, m *Model) *Observed {
	t.Helper()
	obs, err := Observe(s)
	if err == nil {
		err = Check(obs, m, m, StoreOp{Kind: OpReopen}, Done)
	}
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// readsDuringWrites reads the log from three goroutines while it is
// appended to and compacted: every entry in range reads back whole.
func readsDuringWrites(t *testing.T, s Store) {
	w := NewWorkload(rand.New(rand.NewPCG(3, 3)))
	if err := s.StoreLogs(w.batch(1).Logs); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				last, _ := s.LastIndex()
				for i := last; i > 0 && i+16 > last; i-- {
					var l raft.Log
					err := s.GetLog(i, &l)
					if errors.Is(err, raft.ErrLogNotFound) {
						break
					}
					if err != nil || l.Index != i {
						errs <- err
						return
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < 120 && time.Now().Before(deadline); i++ {
		last, _ := s.LastIndex()
		if err := s.StoreLogs(w.batch(last + 1).Logs); err != nil {
			t.Error(err)
			break
		}
		if i%20 == 19 {
			first, _ := s.FirstIndex()
			if err := s.DeleteRange(first, last-5); err != nil {
				t.Error(err)
				break
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a read during writes: %v", err)
	}
}
