package coordinator_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

func TestAcquireReleaseHandsOver(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	observed := cl.Node(2).C().Observe(ctx, "scheduler")
	la, err := a.Acquire(ctx, "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Checkpoint(); err != nil {
		t.Fatalf("fresh lease fails its checkpoint: %v", err)
	}
	if err := b.WaitReady(ctx); err != nil { // TryAcquire does not wait for a session, and b may not have one yet
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "scheduler"); !errors.Is(err, coordinator.ErrLeaseHeld) {
		t.Fatalf("TryAcquire of a held lease: %v", err)
	}
	got := make(chan *coordinator.Lease, 1)
	go func() {
		lb, err := b.Acquire(ctx, "scheduler")
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	cl.WaitFor("b queued", formTimeout, func() error {
		h, ok := b.Holder("scheduler")
		if !ok || h.Token != la.Token() || h.Node.Name != a.NodeName() {
			return fmt.Errorf("%w: holder %+v", holdfasttest.ErrNotYet, h)
		}
		return nil
	})
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(la.Err(), coordinator.ErrReleased) {
		t.Fatalf("released lease ends with %v", la.Err())
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token went from %d to %d", la.Token(), lb.Token())
	}
	// A third node observing the lease sees b's grant (earlier values may
	// be coalesced, never the latest).
	seen := false
	for h := range observed {
		if h.Node.Name == b.NodeName() && h.Token == lb.Token() {
			seen = true
			break
		}
		if h.Token > lb.Token() {
			t.Fatalf("observed a token %d beyond the last grant %d", h.Token, lb.Token())
		}
	}
	if !seen {
		t.Fatal("Observe never delivered the latest holder")
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPausedHolderLosesLeaseFirst(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	holderNode, waiterNode := holderAndWaiter(cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l1, err := holderNode.C().Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan time.Time, 1)
	var l2 *coordinator.Lease
	go func() {
		var err error
		l2, err = waiterNode.C().Acquire(ctx, "job")
		if err != nil {
			t.Error(err)
		}
		granted <- time.Now()
	}()
	lost := make(chan time.Time, 1)
	go func() {
		<-l1.Done()
		lost <- time.Now()
	}()
	// The resource: one row in a real SQLite file and an in-memory
	// register, both fenced, with rejections counted on a registry.
	reg := prometheus.NewRegistry()
	mem := fence.NewMemory(fence.MemoryConfig{Registerer: reg})
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "resource.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := fencedJob(ctx, t, db, reg, mem)
	if e1, e2 := write(l1.Token()); e1 != nil || e2 != nil {
		t.Fatalf("holder's write refused: %v / %v", e1, e2)
	}
	cl.Pause(holderNode.Index)
	tLost, tGranted := <-lost, <-granted
	if l2 == nil {
		t.FailNow()
	}
	if e1, e2 := write(l2.Token()); e1 != nil || e2 != nil {
		t.Fatalf("new holder's write refused: %v / %v", e1, e2)
	}
	cl.Resume(holderNode.Index)
	checkZombieFenced(ctx, t, db, reg, write, l1, l2)
	if !tLost.Before(tGranted) {
		t.Fatalf("holder believed until %v, next holder granted at %v", tLost, tGranted)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d after %d", l2.Token(), l1.Token())
	}
	t.Logf("holder gave up %v before the next grant", tGranted.Sub(tLost))
}

// holderAndWaiter returns the two running nodes other than leader, in the
// order cl.Running lists them: the lease's holder and its waiter.
func holderAndWaiter(cl *holdfasttest.Cluster, leader *holdfasttest.Node) (holderNode, waiterNode *holdfasttest.Node) {
	for _, n := range cl.Running() {
		if n == leader {
			continue
		}
		if holderNode == nil {
			holderNode = n
		} else {
			waiterNode = n
		}
	}
	return holderNode, waiterNode
}

// fencedJob makes the fenced "jobs" table in db with its row "job", fenced
// by a fence.SQL counting its rejections on reg, and returns a write under
// a token: the errors of mem's check of "job" and of the SQL row's advance.
func fencedJob(ctx context.Context, t *testing.T, db *sql.DB, reg *prometheus.Registry, mem *fence.Memory) func(token uint64) (error, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id TEXT PRIMARY KEY, fence INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	fsql, err := fence.NewSQL(fence.SQLConfig{Table: "jobs", KeyColumn: "id", FenceColumn: "fence",
		Placeholder: fence.Question, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := fsql.Init(ctx, db, "job"); err != nil {
		t.Fatal(err)
	}
	return func(token uint64) (error, error) {
		return mem.Check("job", token), fsql.Advance(ctx, db, "job", token)
	}
}

// checkZombieFenced: the zombie (the paused holder of l1, resumed) wakes up
// and writes with its old token, without checking; both fences refuse it
// and count it on reg, and the row keeps l2's token.
func checkZombieFenced(ctx context.Context, t *testing.T, db *sql.DB, reg *prometheus.Registry,
	write func(uint64) (error, error), l1, l2 *coordinator.Lease) {
	e1, e2 := write(l1.Token())
	if !errors.Is(e1, fence.ErrFenced) || !errors.Is(e2, fence.ErrFenced) {
		t.Fatalf("zombie write accepted: memory %v, sql %v", e1, e2)
	}
	if got := metricSum(t, reg, "holdfast_fence_rejections_total"); got < 2 {
		t.Fatalf("fence rejections counted %v, want 2", got)
	}
	var stored uint64
	if err := db.QueryRowContext(ctx, `SELECT fence FROM jobs WHERE id = 'job'`).Scan(&stored); err != nil || stored != l2.Token() {
		t.Fatalf("resource fence %d (%v), want the new holder's %d", stored, err, l2.Token())
	}
}

// metricSum adds up every sample of a counter family in reg.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestTryAcquireWithoutSession: on a node that has no session (alone,
// waiting for two more nodes to form a cluster), TryAcquire and
// TryAcquireSemaphore return at once with Ready's reason, wrapping
// ErrNotReady, instead of waiting for a session until their context ends
// (they used to block and return a bare "context deadline exceeded").
func TestTryAcquireWithoutSession(t *testing.T) {
	t.Parallel()
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "alone"
	cfg.DataDir = t.TempDir()
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // far beyond the test: it must not be what ends the call
	defer cancel()
	_, err = c.TryAcquire(ctx, "x")
	if !errors.Is(err, coordinator.ErrNotReady) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire without a session: %v, want ErrNotReady at once", err)
	}
	want := "holdfast: not ready: not a member of a formed cluster yet (bootstrap: 1 of 3 eligible nodes seen (alone)): TryAcquire does not wait for a session"
	if err.Error() != want {
		t.Errorf("TryAcquire error %q,\nwant %q", err, want)
	}
	_, err = c.TryAcquireSemaphore(ctx, "s", 2)
	if !errors.Is(err, coordinator.ErrNotReady) {
		t.Fatalf("TryAcquireSemaphore without a session: %v, want ErrNotReady", err)
	}
}
