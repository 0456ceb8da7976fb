package fence_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/fence"
)

func TestMemoryAcceptsEqualOrHigherRejectsLower(t *testing.T) {
	m := fence.NewMemory(fence.MemoryConfig{})
	for _, tok := range []uint64{5, 5, 6, 6, 9} {
		if err := m.Check("jobs", tok); err != nil {
			t.Fatalf("Check(%d) = %v, want accepted", tok, err)
		}
	}
	err := m.Check("jobs", 8)
	var fe *fence.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("Check(8) = %v, want *FencedError matching ErrFenced", err)
	}
	if fe.Resource != "jobs" || fe.Token != 8 || fe.Highest != 9 {
		t.Errorf("FencedError = %+v, want {jobs 8 9}", *fe)
	}
	if h := m.Highest("jobs"); h != 9 {
		t.Errorf("Highest = %d, want 9", h)
	}
	if h := m.Highest("other"); h != 0 {
		t.Errorf("Highest(other) = %d, want 0", h)
	}
	if err := m.Check("other", 1); err != nil {
		t.Errorf("resources are independent: Check(other, 1) = %v", err)
	}
	if got := testutil.ToFloat64(m.RejectionsForTest()); got != 1 {
		t.Errorf("rejections = %v, want 1", got)
	}
}

func TestMemoryZeroValueUsable(t *testing.T) {
	var m fence.Memory
	if err := m.Check("r", 3); err != nil {
		t.Fatal(err)
	}
	if err := m.Do("r", 2, func() error { t.Error("write ran for a stale token"); return nil }); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("Do(2) = %v, want ErrFenced", err)
	}
}

func TestMemoryDoRecordsTokenEvenIfWriteFails(t *testing.T) {
	m := fence.NewMemory(fence.MemoryConfig{})
	boom := errors.New("boom")
	if err := m.Do("r", 4, func() error { return boom }); err != boom {
		t.Fatalf("Do = %v, want write's error", err)
	}
	if h := m.Highest("r"); h != 4 {
		t.Fatalf("Highest = %d, want 4", h)
	}
}

// TestMemoryConcurrentMonotonic runs holders with random tokens against a few
// resources: per resource, the writes that ran carry non-decreasing tokens,
// and every rejected token was lower than one already written.
func TestMemoryConcurrentMonotonic(t *testing.T) {
	m := fence.NewMemory(fence.MemoryConfig{})
	const resources, holders, writes = 3, 8, 300
	logs := make([][]uint64, resources) // appended only inside Do: serialized per resource
	var wg sync.WaitGroup
	for h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(h), 1))
			for i := range writes {
				r := rng.IntN(resources)
				tok := uint64(i + rng.IntN(40)) // drifting up, with stale ones
				err := m.Do(strconv.Itoa(r), tok, func() error {
					logs[r] = append(logs[r], tok)
					return nil
				})
				var fe *fence.FencedError
				if err != nil && (!errors.As(err, &fe) || fe.Highest <= tok) {
					t.Errorf("Do(%d, %d) = %v", r, tok, err)
				}
			}
		}()
	}
	wg.Wait()
	for r, log := range logs {
		for i := 1; i < len(log); i++ {
			if log[i] < log[i-1] {
				t.Fatalf("resource %d: write %d carried token %d after %d", r, i, log[i], log[i-1])
			}
		}
		if got := m.Highest(strconv.Itoa(r)); len(log) > 0 && got != log[len(log)-1] {
			t.Errorf("resource %d: Highest = %d, last write %d", r, got, log[len(log)-1])
		}
		t.Logf("resource %d: %d writes accepted of about %d", r, len(log), holders*writes/resources)
	}
}

// TestMemoryDoAtomic holds a write with token 6 open and lets a stale holder
// (5) and a newer one (7) try meanwhile: neither write may start during the
// open one, 5's never runs, and 7's runs after.
func TestMemoryDoAtomic(t *testing.T) {
	m := fence.NewMemory(fence.MemoryConfig{})
	var inWrite atomic.Bool
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.Do("r", 6, func() error {
			inWrite.Store(true)
			close(started)
			<-release
			inWrite.Store(false)
			return nil
		})
	}()
	<-started
	errs := make(chan error, 2)
	var ran7 atomic.Bool
	for _, tok := range []uint64{5, 7} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- m.Do("r", tok, func() error {
				if inWrite.Load() {
					t.Errorf("token %d's write interleaved with token 6's", tok)
				}
				if tok == 5 {
					t.Errorf("stale token 5's write ran")
				}
				ran7.Store(true)
				return nil
			})
		}()
	}
	if err := m.Check("other", 1); err != nil { // other resources are not blocked
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	close(errs)
	var fenced int
	for err := range errs {
		if errors.Is(err, fence.ErrFenced) {
			fenced++
		} else if err != nil {
			t.Error(err)
		}
	}
	if fenced != 1 || !ran7.Load() || m.Highest("r") != 7 {
		t.Fatalf("fenced=%d ran7=%v highest=%d, want 1 true 7", fenced, ran7.Load(), m.Highest("r"))
	}
}

func TestMetricsRegistries(t *testing.T) {
	r1, r2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := fence.NewMemory(fence.MemoryConfig{Registerer: r1})
	b := fence.NewMemory(fence.MemoryConfig{Registerer: r1}) // shares a's series
	c := fence.NewMemory(fence.MemoryConfig{Registerer: r2})
	s, err := fence.NewSQL(fence.SQLConfig{Table: "t", KeyColumn: "k", FenceColumn: "f",
		Placeholder: fence.Question, Registerer: r1})
	if err != nil {
		t.Fatalf("NewSQL on a registry with a Memory: %v", err)
	}
	for _, m := range []*fence.Memory{a, b, c} {
		_ = m.Check("r", 2)
		_ = m.Check("r", 1)
	}
	if got := testutil.ToFloat64(a.RejectionsForTest()); got != 2 {
		t.Errorf("shared memory rejections on r1 = %v, want 2", got)
	}
	if got := testutil.ToFloat64(c.RejectionsForTest()); got != 1 {
		t.Errorf("memory rejections on r2 = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.RejectionsForTest()); got != 0 {
		t.Errorf("sql rejections = %v, want 0", got)
	}
	if n, err := testutil.GatherAndCount(r1, "holdfast_fence_rejections_total"); err != nil || n != 2 {
		t.Errorf("r1 series = %d, %v; want 2 (memory, sql)", n, err)
	}

	// A different metric under the same name: NewSQL reports it.
	bad := prometheus.NewRegistry()
	bad.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_fence_rejections_total", Help: "x"}))
	if _, err := fence.NewSQL(fence.SQLConfig{Table: "t", KeyColumn: "k", FenceColumn: "f",
		Placeholder: fence.Question, Registerer: bad}); err == nil {
		t.Error("NewSQL with a conflicting metric: no error")
	}
	if m := fence.NewMemory(fence.MemoryConfig{Registerer: bad}); m.Check("r", 1) != nil {
		t.Error("Memory with a conflicting metric does not work")
	}
}

// TestMemoryLargeTokens checks Memory with tokens of clusters created with
// a token base: the clock in microseconds up to the top of uint64. The
// scenario is the one a token base exists for: an old incarnation's paused
// holder with a small token is refused once the new cluster wrote.
func TestMemoryLargeTokens(t *testing.T) {
	m := fence.NewMemory(fence.MemoryConfig{})
	const clockBase = 1_771_000_000_000_000
	for _, tok := range []uint64{4, clockBase + 1, clockBase + 1, 1<<62 + 7, 1<<64 - 1} {
		if err := m.Check("r", tok); err != nil {
			t.Fatalf("Check(%d) = %v", tok, err)
		}
	}
	if err := m.Check("r", 1<<62+7); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("an older large token: %v", err)
	}
	if err := m.Check("old-zombie", 3); err != nil {
		t.Fatal(err)
	}
	if err := m.Check("old-zombie", clockBase+1); err != nil {
		t.Fatal(err)
	}
	if err := m.Check("old-zombie", 4); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("the old cluster's paused holder: %v", err)
	}
}
