package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// errNotLeading is the Check's answer while no term runs.
var errNotLeading = errors.New("test: not leading")

// grantTerm is a grant as the election sees it.
type grantTerm struct{ *Grant }

func (g grantTerm) Context() context.Context { return g.Belief().Context() }
func (g grantTerm) Err() error               { return context.Cause(g.Context()) }
func (g grantTerm) Checkpoint() error        { return g.Err() }

// term is one term an election started: its lease and its context.
type term struct {
	lease grantTerm
	ctx   context.Context
}

// elected is an Election over the harness's part, with its callbacks
// recorded, running until stop.
type elected struct {
	e       *Election[grantTerm]
	check   Check[grantTerm]
	started chan term
	stopped chan error
	done    chan error // Run's result
	cancel  context.CancelFunc

	mu      sync.Mutex
	leaders []Holder // OnNewLeader's holders
	fails   int      // Acquire calls left to fail with errUnknown
}

// runElection starts an election for name on h's part; fails makes its
// first Acquire calls fail.
func (h *harness) runElection(name string, fails int) *elected {
	h.t.Helper()
	el := &elected{started: make(chan term, 16), stopped: make(chan error, 16), done: make(chan error, 1), fails: fails}
	el.e = &Election[grantTerm]{
		Name: name,
		Acquire: func(ctx context.Context) (grantTerm, error) {
			el.mu.Lock()
			fail := el.fails > 0
			el.fails--
			el.mu.Unlock()
			if fail {
				return grantTerm{}, errUnknown
			}
			g, err := h.part.Acquire(ctx, Request{Kind: Lease, Name: name, Wait: true})
			return grantTerm{g}, err
		},
		OnStartedLeading: func(ctx context.Context, l grantTerm) {
			el.started <- term{lease: l, ctx: ctx}
			<-ctx.Done()
		},
		OnStoppedLeading: func(cause error) { el.stopped <- cause },
		OnNewLeader: func(holder Holder) {
			el.mu.Lock()
			el.leaders = append(el.leaders, holder)
			el.mu.Unlock()
		},
		Observe: func(ctx context.Context) <-chan Holder {
			ch := make(chan Holder, 1)
			go Observe(ctx, nil, h.fsm.View, name, ch, func(h Holder) Holder { return h })
			return ch
		},
		Self:           func(l grantTerm) Holder { return Holder{Node: "self", Session: l.SessionID(), Token: l.Token()} },
		Check:          &el.check,
		Shutdown:       errShutdown,
		ReleaseTimeout: waitFor,
		BackoffMin:     time.Millisecond,
		BackoffMax:     time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	el.cancel = cancel
	go func() { el.done <- el.e.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-el.done })
	return el
}

func (el *elected) nextTerm(t *testing.T) term {
	t.Helper()
	select {
	case tm := <-el.started:
		return tm
	case <-time.After(waitFor):
		t.Fatal("no term started")
		return term{}
	}
}

func (el *elected) nextStop(t *testing.T) error {
	t.Helper()
	select {
	case cause := <-el.stopped:
		return cause
	case <-time.After(waitFor):
		t.Fatal("no OnStoppedLeading")
		return nil
	}
}

// noMoreStops fails if OnStoppedLeading was called again.
func (el *elected) noMoreStops(t *testing.T) {
	t.Helper()
	select {
	case cause := <-el.stopped:
		t.Fatalf("OnStoppedLeading called twice for one term (again with %v)", cause)
	default:
	}
}

func (el *elected) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-el.done:
		el.done <- err // for the cleanup
		return err
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
		return nil
	}
}

// A lost lease ends its term: the term's context ends with the lease's
// cause, OnStoppedLeading is called once with it, and the election
// acquires the lease again with a larger token. When Run's context ends,
// the term ends, the lease is released, OnStoppedLeading is called once
// more, and Run returns nil.
func TestElectionAcquiresAgainAfterLoss(t *testing.T) {
	h := newHarness(t)
	el := h.runElection("x", 0)
	first := el.nextTerm(t)
	if err := el.check.Ready(errNotLeading); err != nil {
		t.Fatalf("Ready during a term: %v", err)
	}
	g := first.lease
	h.commit(Lease.ReleaseCmd(g.Name(), g.SessionID(), g.Request(), g.Token()))
	if cause := el.nextStop(t); !errors.Is(cause, errLost) {
		t.Fatalf("OnStoppedLeading(%v), want errLost", cause)
	}
	if first.ctx.Err() == nil {
		t.Fatal("the lost term's context did not end")
	}

	second := el.nextTerm(t)
	if second.lease.Token() <= g.Token() {
		t.Fatalf("second term's token %d, first's %d: want larger", second.lease.Token(), g.Token())
	}
	el.noMoreStops(t)

	el.cancel()
	if err := el.result(t); err != nil {
		t.Fatalf("Run returned %v after its context ended, want nil", err)
	}
	if cause := el.nextStop(t); !errors.Is(cause, errReleased) {
		t.Fatalf("OnStoppedLeading(%v) after Run's context ended, want errReleased", cause)
	}
	el.noMoreStops(t)
	if second.ctx.Err() == nil {
		t.Fatal("the term's context did not end with Run's")
	}
	if err := free(h.fsm.View(), Lease, "x"); err != nil {
		t.Fatalf("the lease was not released when Run's context ended: %v", err)
	}
	if err := el.check.Ready(errNotLeading); !errors.Is(err, errNotLeading) {
		t.Fatalf("Ready after the election: %v, want errNotLeading", err)
	}
}

// OnNewLeader sees each holder once, in order: another node's, then this
// node's when the lease comes to it. The Check is ready only during this
// node's term.
func TestElectionReportsNewLeaders(t *testing.T) {
	h := newHarness(t)
	h.other("o")
	h.commit(fsm.Command{Op: fsm.OpAcquire, Lease: &fsm.LeaseCmd{Name: "x", Session: "o", Request: 1}})
	el := h.runElection("x", 0)
	testkit.Eventually(t, "OnNewLeader reports the other node", waitFor, func() error {
		el.mu.Lock()
		defer el.mu.Unlock()
		if len(el.leaders) != 1 || el.leaders[0].Node != "n-o" {
			return fmt.Errorf("leaders %+v, want the other node's", el.leaders)
		}
		return nil
	})
	if err := el.check.Ready(errNotLeading); !errors.Is(err, errNotLeading) {
		t.Fatalf("Ready while another node leads: %v, want errNotLeading", err)
	}
	h.commit(Lease.ReleaseCmd("x", "o", 1, 0))
	tm := el.nextTerm(t)
	testkit.Eventually(t, "OnNewLeader reports this node", waitFor, func() error {
		el.mu.Lock()
		defer el.mu.Unlock()
		if len(el.leaders) != 2 || el.leaders[1].Session != tm.lease.SessionID() || el.leaders[1].Token != tm.lease.Token() {
			return fmt.Errorf("leaders %+v, want the other node's then this node's (token %d)", el.leaders, tm.lease.Token())
		}
		return nil
	})
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.leaders[0].Token >= el.leaders[1].Token {
		t.Fatalf("leaders' tokens %d then %d: want increasing", el.leaders[0].Token, el.leaders[1].Token)
	}
}

// Failed acquires are retried; a node shutting down ends the term with
// its cause and Run returns the Shutdown error.
func TestElectionRetriesThenStopsOnShutdown(t *testing.T) {
	h := newHarness(t)
	el := h.runElection("x", 3)
	el.nextTerm(t)
	el.mu.Lock()
	left := el.fails
	el.mu.Unlock()
	if left >= 0 {
		t.Fatalf("a term started with %d failing acquires left", left)
	}
	h.part.EndAll(errShutdown)
	if cause := el.nextStop(t); !errors.Is(cause, errShutdown) {
		t.Fatalf("OnStoppedLeading(%v), want errShutdown", cause)
	}
	if err := el.result(t); !errors.Is(err, errShutdown) {
		t.Fatalf("Run returned %v on shutdown, want errShutdown", err)
	}
	el.noMoreStops(t)
}

// TestElectionReportsItselfBeforeItsReplica: a term's own holder reaches
// OnNewLeader as the term starts, even when the replica never shows the
// grant (an acquire returns on the leader's answer, and a node cut off
// right after never applies it); the replica's later view of the same
// grant, or of an older one, is not reported again.
func TestElectionReportsItselfBeforeItsReplica(t *testing.T) {
	h := newHarness(t)
	views := make(chan Holder)
	var mu sync.Mutex
	var got []Holder
	started := make(chan grantTerm, 1)
	e := &Election[grantTerm]{
		Name: "y",
		Acquire: func(ctx context.Context) (grantTerm, error) {
			g, err := h.part.Acquire(ctx, Request{Kind: Lease, Name: "y", Wait: true})
			return grantTerm{g}, err
		},
		OnStartedLeading: func(ctx context.Context, l grantTerm) { started <- l; <-ctx.Done() },
		OnNewLeader: func(holder Holder) {
			mu.Lock()
			got = append(got, holder)
			mu.Unlock()
		},
		Observe: func(ctx context.Context) <-chan Holder {
			out := make(chan Holder)
			go func() {
				defer close(out)
				for {
					select {
					case hv := <-views:
						select {
						case out <- hv:
						case <-ctx.Done():
							return
						}
					case <-ctx.Done():
						return
					}
				}
			}()
			return out
		},
		Self:           func(l grantTerm) Holder { return Holder{Node: "self", Session: l.SessionID(), Token: l.Token()} },
		Shutdown:       errShutdown,
		ReleaseTimeout: waitFor,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var l grantTerm
	select {
	case l = <-started:
	case <-time.After(waitFor):
		t.Fatal("no term started")
	}
	testkit.Eventually(t, "OnNewLeader reports this node without a view showing it", waitFor, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].Node != "self" || got[0].Token != l.Token() {
			return fmt.Errorf("reported %+v, want this node with token %d", got, l.Token())
		}
		return nil
	})
	views <- Holder{Node: "self", Session: l.SessionID(), Token: l.Token()} // the replica catches up
	views <- Holder{Node: "old", Token: l.Token() - 1}                      // a stale view
	views <- Holder{Node: "next", Token: l.Token() + 1}                     // the next holder
	testkit.Eventually(t, "OnNewLeader reports the next holder once, after this node", waitFor, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || got[1].Node != "next" {
			return fmt.Errorf("reported %+v, want this node then the next holder only", got)
		}
		return nil
	})
}
