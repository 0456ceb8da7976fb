package coordinator_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
	var holderNode, waiterNode *holdfasttest.Node
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
	write := func(token uint64) (error, error) {
		return mem.Check("job", token), fsql.Advance(ctx, db, "job", token)
	}
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
	// The zombie wakes up and writes with its old token, without checking.
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
	if !tLost.Before(tGranted) {
		t.Fatalf("holder believed until %v, next holder granted at %v", tLost, tGranted)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d after %d", l2.Token(), l1.Token())
	}
	t.Logf("holder gave up %v before the next grant", tGranted.Sub(tLost))
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

// TestHolderShape: a lease, a semaphore permit and a shard held by one node
// are described by the same Holder, with the node's name, identity, service
// address and session, and each grant's own token.
func TestHolderShape(t *testing.T) {
	t.Parallel()
	const addr = "svc.example:8080"
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) {
		c.ServiceAddr = addr
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.AcquireSemaphore(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	sess, ok := c.Session()
	if !ok {
		t.Fatal("no session")
	}
	want := func(token uint64) coordinator.Holder {
		return coordinator.Holder{Node: coordinator.Node{Name: c.NodeName(), ID: c.ID()}, Addr: addr, Session: sess.ID, Token: token}
	}
	check := func(what string, got, want coordinator.Holder) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	h, _ := c.Holder("l")
	check("Holder", h, want(l.Token()))
	if ls := c.Leases(); len(ls) != 1 || ls[0].Name != "l" {
		t.Errorf("Leases: %+v", ls)
	} else {
		check("Leases", ls[0].Holder, want(l.Token()))
	}
	if hs := c.Semaphore("s"); len(hs) != 1 {
		t.Errorf("Semaphore: %+v", hs)
	} else {
		check("Semaphore", hs[0], want(p.Token()))
	}
	cl.WaitFor("a shard owned", formTimeout, func() error {
		if len(c.Owned()) == 0 {
			return fmt.Errorf("%w: no shard", holdfasttest.ErrNotYet)
		}
		return nil
	})
	sl := c.Owned()[0]
	o, _ := c.Owner(sl.Shard())
	check("Owner", o, want(sl.Token()))
	info, _ := c.Table().Shard(sl.Shard())
	check("ShardInfo.Owner", info.Owner, want(sl.Token()))
}

// testHolderValue: a holder value given to Acquire is shown with the
// holder on every node (Holder after Sync, Observe, Leases); SetValue
// changes it under the same token; a waiter's value comes with its grant;
// RunElection's Value reaches the other nodes' OnNewLeader; bad values and
// a released lease are refused with errors that say so.
func testHolderValue(t *testing.T, cl *holdfasttest.Cluster) {
	cl.WaitFormed(formTimeout)
	a, b := cl.Node(0).C(), cl.Node(1).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()

	l, err := a.Acquire(ctx, "svc", coordinator.WithValue("10.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	obs := b.WatchHolder(ctx, "svc")
	readOn := func(c *coordinator.Coordinator) coordinator.Holder {
		t.Helper()
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		h, _ := c.Holder("svc")
		return h
	}
	if h := readOn(b); h.Value != "10.0.0.1:8080" || h.Token != l.Token() || l.Value() != "10.0.0.1:8080" {
		t.Fatalf("holder on another node %+v, lease value %q", h, l.Value())
	}
	waitValue := func(want string) {
		t.Helper()
		for {
			select {
			case h := <-obs:
				if h.Value == want {
					if h.Token != l.Token() {
						t.Fatalf("observed %+v: the value changed the token", h)
					}
					return
				}
			case <-ctx.Done():
				t.Fatalf("Observe never showed value %q", want)
			}
		}
	}
	waitValue("10.0.0.1:8080")
	if err := l.SetValue(ctx, "10.0.0.1:9090"); err != nil {
		t.Fatal(err)
	}
	waitValue("10.0.0.1:9090")
	if h := readOn(b); h.Value != "10.0.0.1:9090" || h.Token != l.Token() {
		t.Fatalf("after SetValue: %+v", h)
	}
	if li, ok := leaseInfo(b, "svc"); !ok || li.Holder.Value != "10.0.0.1:9090" {
		t.Fatalf("Leases: %+v", b.Leases())
	}

	for _, bad := range []string{strings.Repeat("x", coordinator.MaxValueLength+1), "\xff"} {
		if _, err := b.TryAcquire(ctx, "other", coordinator.WithValue(bad)); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("WithValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
		if err := l.SetValue(ctx, bad); !errors.Is(err, coordinator.ErrInvalidValue) {
			t.Errorf("SetValue(%.5q): %v, want ErrInvalidValue", bad, err)
		}
	}

	waited := make(chan *coordinator.Lease, 1)
	go func() {
		bl, err := b.Acquire(ctx, "svc", coordinator.WithValue("waiter b"))
		if err != nil {
			t.Error(err)
		}
		waited <- bl
	}()
	cl.WaitFor("b queued for svc", formTimeout, func() error {
		if li, ok := leaseInfo(a, "svc"); !ok || li.Waiters != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.SetValue(ctx, "too late"); !errors.Is(err, coordinator.ErrReleased) {
		t.Errorf("SetValue after Release: %v, want ErrReleased", err)
	}
	bl := <-waited
	if bl == nil {
		t.FailNow()
	}
	if h := readOn(a); h.Node.Name != cl.Node(1).Name || h.Value != "waiter b" || bl.Value() != "waiter b" {
		t.Fatalf("the waiter's grant: %+v", h)
	}
	if err := bl.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// An election publishes where its leader serves: another candidate's
	// OnNewLeader sees it.
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{}, 2)
	started := make(chan struct{}, 1)
	go func() {
		a.RunElection(ectx, coordinator.ElectionConfig{Name: "elected", Value: "a serves at :8080",
			OnStartedLeading: func(ctx context.Context, _ *coordinator.Lease) { started <- struct{}{}; <-ctx.Done() }})
		done <- struct{}{}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("a never led")
	}
	leaders := make(chan coordinator.Holder, 16)
	go func() {
		b.RunElection(ectx, coordinator.ElectionConfig{Name: "elected", Value: "b",
			OnStartedLeading: func(ctx context.Context, _ *coordinator.Lease) { <-ctx.Done() },
			OnNewLeader:      func(h coordinator.Holder) { leaders <- h }})
		done <- struct{}{}
	}()
	select {
	case h := <-leaders:
		if h.Node.Name != cl.Node(0).Name || h.Value != "a serves at :8080" {
			t.Errorf("b's OnNewLeader: %+v, want a with its value", h)
		}
	case <-ctx.Done():
		t.Fatal("b's OnNewLeader never called")
	}
	stop()
	<-done
	<-done
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

// TestReleaseIsOrdered: a Release (which returns once the release has
// committed) and a ReleaseBeforeCommit (which returns once raft on the
// leader has taken the release in, before it commits) must both come
// before everything that follows them, whether made on the leader or on a
// follower: the releasing node's next TryAcquire of the name is granted
// with a larger token, the other node's TryAcquire right after the release
// is granted (not refused as held), and a Sync on the other node right
// after it sees the name free (with no fault: the early release gives no
// such promise once its leader loses office).
func TestReleaseIsOrdered(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout).C()
	var follower *coordinator.Coordinator
	for _, n := range cl.Running() {
		if n.C() != leader {
			follower = n.C()
			break
		}
	}
	cl.WaitFor("a session on every node", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for _, early := range []bool{false, true} {
		release := (*coordinator.Lease).Release
		if early {
			release = (*coordinator.Lease).ReleaseBeforeCommit
		}
		t.Run(fmt.Sprintf("early=%v/on the leader", early), func(t *testing.T) { releaseOrdered(ctx, t, leader, follower, release) })
		t.Run(fmt.Sprintf("early=%v/on a follower", early), func(t *testing.T) { releaseOrdered(ctx, t, follower, leader, release) })
	}
}

// releaseOrdered acquires and releases "x" on c, then takes it at once on
// c (even rounds) or on other (odd rounds), checking that the release came
// first; each round's grant is released and, on even rounds, other's Sync
// must show the name free.
func releaseOrdered(ctx context.Context, t *testing.T, c, other *coordinator.Coordinator,
	release func(*coordinator.Lease, context.Context) error) {
	t.Helper()
	var last uint64
	for i := 0; i < 20; i++ {
		l, err := c.Acquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: acquire: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("round %d: token %d after %d", i, l.Token(), last)
		}
		if err := release(l, ctx); err != nil {
			t.Fatalf("round %d: release: %v", i, err)
		}
		if i%2 == 0 {
			// The node's own next acquire follows the release.
			l2, err := c.TryAcquire(ctx, "x")
			if err != nil {
				t.Fatalf("round %d: TryAcquire right after its own Release: %v", i, err)
			}
			last = l2.Token()
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("round %d: release: %v", i, err)
			}
			if err := other.Sync(ctx); err != nil {
				t.Fatalf("round %d: the other node's Sync: %v", i, err)
			}
			if h, held := other.Holder("x"); held {
				t.Fatalf("round %d: after the Release and the other node's Sync, %q is held by %+v", i, "x", h)
			}
			continue
		}
		fl, err := other.TryAcquire(ctx, "x")
		if err != nil {
			t.Fatalf("round %d: the other node's TryAcquire right after the Release: %v", i, err)
		}
		last = fl.Token()
		if err := fl.Release(ctx); err != nil {
			t.Fatalf("round %d: the other node's release: %v", i, err)
		}
	}
}

// TestReturnedReleaseVisibleAfterLeaderLoss: once Release has returned,
// every node's Sync-then-Holder sees the name released, even when the
// leader that took the release in loses office right after. The leader
// holds the lease, is cut off from the other voters, and releases at once
// (it still believes it leads). Whenever Release returns, a Sync on the
// new leader must read the name free.
func TestReturnedReleaseVisibleAfterLeaderLoss(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := leader.C().Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	cl.Isolate(leader.Index)
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	var next *holdfasttest.Node
	cl.WaitFor("a new leader among the others", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n != leader && n.C().RaftState() == coordinator.StateLeader {
				next = n
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	select {
	case err := <-released:
		// Returned while the old leader was cut off: the others must see it.
		if err != nil {
			t.Fatalf("Release: %v", err)
		}
		checkReleased(ctx, t, next.C(), "r", "Release returned while its leader was cut off")
		cl.Heal()
	default:
		cl.Heal()
		if err := <-released; err != nil {
			t.Fatalf("Release: %v", err)
		}
		checkReleased(ctx, t, next.C(), "r", "Release returned after the heal")
	}
}

// checkReleased fails the test unless a Sync on c, then Holder, shows name
// free.
func checkReleased(ctx context.Context, t *testing.T, c *coordinator.Coordinator, name, when string) {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("%s: Sync on %s: %v", when, c.NodeName(), err)
	}
	if h, held := c.Holder(name); held {
		t.Fatalf("%s: %s's Sync then Holder still shows %q held by %+v", when, c.NodeName(), name, h)
	}
}

// waitSessions waits until every running node has a session.
func waitSessions(t *testing.T, cl *holdfasttest.Cluster) {
	t.Helper()
	cl.WaitFor("a session on every node", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return fmt.Errorf("%w: %s has no session", holdfasttest.ErrNotYet, n.Name)
			}
		}
		return nil
	})
}

// TestReleaseRedeliveredToNextLeader: a release a follower sent to a
// leader that took it in and then lost office reaches the next leader as
// soon as the follower learns of the change, without waiting out the
// attempt timeout (here RPCTimeout, made far longer than the test) or the
// caller's context. The old leader's traffic is delayed, so it takes the
// release in but cannot replicate it before the others elect a new leader;
// then it is cut off for good.
func TestReleaseRedeliveredToNextLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true,
		Configure: func(_ int, c *coordinator.Config) {
			c.RPCTimeout, c.Cluster.BootstrapPromiseTTL = 5*time.Minute, 11*time.Minute
		}})
	leader := cl.WaitFormed(formTimeout)
	waitSessions(t, cl)
	a, b := followersOf(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := a.C().Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	late := time.Second
	cl.Net.SetDelay(leader.C().RPCAddr(), "", late, late)
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	cl.WaitFor("a new leader among the followers", formTimeout, func() error {
		for _, n := range []*holdfasttest.Node{a, b} {
			if n.C().RaftState() == coordinator.StateLeader {
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	cl.Isolate(leader.Index)
	cl.Net.SetDelay(leader.C().RPCAddr(), "", 0, 0)
	cl.WaitFor("the name free on the new leader's side", formTimeout, func() error {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		if err := b.C().Sync(sctx); err != nil {
			return fmt.Errorf("%w: Sync: %v", holdfasttest.ErrNotYet, err)
		}
		if h, held := b.C().Holder("r"); held {
			return fmt.Errorf("%w: held by %+v", holdfasttest.ErrNotYet, h)
		}
		return nil
	})
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release: %v", err)
		}
	case <-time.After(formTimeout):
		t.Fatal("Release has not returned although the next leader committed it")
	}
	cl.Heal()
}
