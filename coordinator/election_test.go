package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// runner is one node's RunLeader under test, with its callbacks recorded.
type runner struct {
	i       int
	cancel  context.CancelFunc
	done    chan error  // RunLeader's result
	started chan uint64 // tokens of terms started
	stopped chan error  // causes of terms ended
	check   coordinator.ElectionCheck
	mu      sync.Mutex
	holders []uint64 // tokens OnNewLeader was called with
}

func startRunner(c *coordinator.Coordinator, i int, name string) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{i: i, cancel: cancel, done: make(chan error, 1),
		started: make(chan uint64, 16), stopped: make(chan error, 16)}
	go func() {
		r.done <- c.RunElection(ctx, coordinator.ElectionConfig{
			Name:  name,
			Check: &r.check,
			OnStartedLeading: func(ctx context.Context, l *coordinator.Lease) {
				r.started <- l.Token()
				<-ctx.Done()
			},
			OnStoppedLeading: func(cause error) { r.stopped <- cause },
			OnNewLeader: func(h coordinator.Holder) {
				r.mu.Lock()
				r.holders = append(r.holders, h.Token)
				r.mu.Unlock()
			},
		})
	}()
	return r
}

// stop cancels the runner's context and returns RunLeader's result.
func (r *runner) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(formTimeout):
		t.Fatalf("node %d: RunLeader did not return after its context ended", r.i)
		return nil
	}
}

// nextStart waits for a term to start on one of rs and returns it.
func nextStart(t *testing.T, rs ...*runner) (*runner, uint64) {
	t.Helper()
	deadline := time.After(formTimeout)
	for {
		for _, r := range rs {
			select {
			case tok := <-r.started:
				return r, tok
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatal("no node started leading")
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
}

func waitStopped(t *testing.T, r *runner) error {
	t.Helper()
	select {
	case cause := <-r.stopped:
		return cause
	case <-time.After(formTimeout):
		t.Fatalf("node %d: no OnStoppedLeading", r.i)
		return nil
	}
}

// TestRunElection runs RunLeader on three nodes: one leads and is the only
// ready one; isolating it ends its term by its own timer and another node
// takes over; once healed it campaigns again on its own, and gets the
// lease when the others' contexts end (the one leading releases). Tokens
// only grow, and OnNewLeader reports each holder in order.
func TestRunElection(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	cl.WaitFormed(formTimeout)
	const name = "scheduler"
	var rs []*runner
	for i := range 3 {
		rs = append(rs, startRunner(cl.Node(i).C(), i, name))
	}
	defer func() {
		for _, r := range rs {
			r.cancel()
		}
	}()

	first, t1 := nextStart(t, rs...)
	t.Logf("node %d leads with token %d", first.i, t1)
	if err := first.check.Ready(); err != nil {
		t.Errorf("leader's check: %v", err)
	}
	var others []*runner
	for _, r := range rs {
		if r != first {
			others = append(others, r)
			if err := r.check.Ready(); !errors.Is(err, coordinator.ErrNotLeading) { // the deprecated name still matches
				t.Errorf("node %d (not leading) check: %v, want ErrNotLeading", r.i, err)
			}
		}
	}

	cl.Isolate(first.i)
	cause := waitStopped(t, first)
	if cause == nil || errors.Is(cause, coordinator.ErrReleased) {
		t.Errorf("isolated leader's term ended with %v, want a lost lease", cause)
	}
	second, t2 := nextStart(t, others...)
	t.Logf("isolated node %d stopped (%v); node %d leads with token %d", first.i, cause, second.i, t2)
	if t2 <= t1 {
		t.Errorf("token %d after %d", t2, t1)
	}
	cl.Heal()

	third := others[0]
	if third == second {
		third = others[1]
	}
	if err := third.stop(t); err != nil {
		t.Errorf("waiting node's RunLeader: %v", err)
	}
	if err := second.stop(t); err != nil {
		t.Errorf("leading node's RunLeader: %v", err)
	}
	if cause := waitStopped(t, second); !errors.Is(cause, coordinator.ErrReleased) {
		t.Errorf("cancelled leader's term ended with %v, want ErrReleased", cause)
	}
	again, t3 := nextStart(t, first, third)
	if again != first || t3 <= t2 {
		t.Fatalf("node %d leads with token %d; want node %d (re-campaigned after its loss) with a token above %d",
			again.i, t3, first.i, t2)
	}
	waitHolderHistory(t, cl, first, t1, t3)
	stopLastLeader(t, cl, first, second.i, name)
}

// waitHolderHistory waits until r's OnNewLeader has seen, in increasing
// token order, the holders from token first to token last.
func waitHolderHistory(t *testing.T, cl *holdfasttest.Cluster, r *runner, first, last uint64) {
	t.Helper()
	cl.WaitFor("OnNewLeader to reach the last holder", formTimeout, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		hs := r.holders
		for k := 1; k < len(hs); k++ {
			if hs[k] <= hs[k-1] {
				return fmt.Errorf("holders out of order: %v", hs)
			}
		}
		if len(hs) == 0 || hs[0] != first || hs[len(hs)-1] != last {
			return fmt.Errorf("%w: holders %v, want %d first and %d last", holdfasttest.ErrNotYet, hs, first, last)
		}
		return nil
	})
}

// stopLastLeader stops r, the leading runner: its check then reports the
// lease not held, and the lease comes free (as node viewer's replica
// shows it).
func stopLastLeader(t *testing.T, cl *holdfasttest.Cluster, r *runner, viewer int, name string) {
	t.Helper()
	if err := r.stop(t); err != nil {
		t.Errorf("RunLeader: %v", err)
	}
	if err := r.check.Ready(); !errors.Is(err, coordinator.ErrLeaseNotHeld) {
		t.Errorf("check after RunLeader returned: %v", err)
	}
	if h, ok := cl.Node(viewer).C().Holder(name); ok {
		cl.WaitFor("the lease released", formTimeout, func() error {
			if h, ok = cl.Node(viewer).C().Holder(name); ok {
				return fmt.Errorf("%w: held by %s", holdfasttest.ErrNotYet, h.Node)
			}
			return nil
		})
	}
}

// TestRunElectionConfigAndShutdown: RunElection refuses a config without
// a name or a callback, and a Shutdown ends a running term with
// ErrShutdown and makes RunLeader return it.
func TestRunElectionConfigAndShutdown(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, InMemory: true})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx := context.Background()
	for _, cfg := range []coordinator.ElectionConfig{
		{OnStartedLeading: func(context.Context, *coordinator.Lease) {}},
		{Name: "x"},
	} {
		if err := c.RunElection(ctx, cfg); !errors.Is(err, coordinator.ErrInvalidConfig) {
			t.Errorf("RunElection(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	r := startRunner(c, 0, "solo")
	if _, tok := nextStart(t, r); tok == 0 {
		t.Error("token 0")
	}
	sctx, cancel := context.WithTimeout(ctx, formTimeout)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if cause := waitStopped(t, r); !errors.Is(cause, coordinator.ErrShutdown) {
		t.Errorf("term ended with %v, want ErrShutdown", cause)
	}
	select {
	case err := <-r.done:
		if !errors.Is(err, coordinator.ErrShutdown) {
			t.Errorf("RunLeader = %v, want ErrShutdown", err)
		}
	case <-time.After(formTimeout):
		t.Fatal("RunLeader did not return after Shutdown")
	}
}

// testElectionNeverReportsReleasedHolder: a follower acquires and releases
// a lease, then runs an election over it: OnNewLeader's first report is
// the follower's own new term, never the grant it had just released (its
// replica may still show that grant when the election starts; RunElection
// reads the holders only once its replica reflects what was committed
// before it began). Repeated, since the lag it guards against is a race.
func testElectionNeverReportsReleasedHolder(t *testing.T, cl *holdfasttest.Cluster) {
	leader := cl.WaitFormed(formTimeout)
	f := cl.Node((leader.Index + 1) % 3).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for round := range 5 {
		l, err := f.Acquire(ctx, "released-first")
		if err != nil {
			t.Fatal(err)
		}
		released := l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := startRunner(f, 0, "released-first")
		var term uint64
		select {
		case term = <-r.started:
		case <-ctx.Done():
			t.Fatal("no term started")
		}
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		holders := append([]uint64(nil), r.holders...)
		r.mu.Unlock()
		for _, tok := range holders {
			if tok <= released {
				t.Fatalf("round %d: OnNewLeader reported token %d, the grant released before the election (%d); reports %v, term %d",
					round, tok, released, holders, term)
			}
		}
	}
}
