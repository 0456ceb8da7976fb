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

// fakeLeader stands for raft on the leader behind Proposer.Accept: it takes
// commands in, in order, and commits them (to the harness's replicas) only
// when told to, or before the next command proposed through h.propose (a
// later command of this node comes after them in the log). lose makes the
// commands taken in fail instead, uncommitted (leadership lost). remote
// makes it a leader on another node: Submit returns no wait, and lost
// commands are simply dropped.
type fakeLeader struct {
	h      *harness
	mu     sync.Mutex
	taken  []*taken
	lose   bool
	remote bool
}

type taken struct {
	cmd  fsm.Command
	err  error
	res  Result
	done chan struct{}
}

func (h *harness) submit(ctx context.Context, cmd fsm.Command) (func(context.Context) (Result, error), error) {
	h.mu.Lock()
	l := h.leader
	if l != nil {
		h.proposed = append(h.proposed, cmd)
	}
	h.mu.Unlock()
	if l == nil {
		return nil, errors.New("test: not the leader")
	}
	t := &taken{cmd: cmd, done: make(chan struct{})}
	l.mu.Lock()
	l.taken = append(l.taken, t)
	remote := l.remote
	l.mu.Unlock()
	if remote {
		return nil, nil
	}
	return func(ctx context.Context) (Result, error) {
		select {
		case <-t.done:
			return t.res, t.err
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}, nil
}

// commitAll commits (or, with lose, fails) every command taken in, in
// order. A nil leader does nothing.
func (l *fakeLeader) commitAll() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.taken {
		if l.lose {
			t.err = errUnknown
		} else {
			r, index := l.h.commit(t.cmd)
			t.res = Result{Index: index, Token: r.Token, Holder: r.Holder, Request: r.Request}
		}
		close(t.done)
	}
	l.taken = nil
}

// leaderChanged is the harness's Options.LeaderChanged.
func (h *harness) leaderChanged() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// changeLeader reports a change of leader to whoever waits.
func (h *harness) changeLeader() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.changed)
	h.changed = make(chan struct{})
}

// acquireAndReleaseEarly acquires "x" of kind k and gives it up with
// ReleaseBeforeCommit, failing the test on an error.
func (h *harness) acquireAndReleaseEarly(k Kind) *Grant {
	h.t.Helper()
	g := h.acquire(req(k, "x", true))
	if err := g.ReleaseBeforeCommit(context.Background()); err != nil {
		h.t.Fatalf("release: %v", err)
	}
	return g
}

func (h *harness) becomeLeader() *fakeLeader {
	l := &fakeLeader{h: h}
	h.mu.Lock()
	h.leader = l
	h.mu.Unlock()
	return l
}

// An early release (ReleaseBeforeCommit) on the leader returns once the
// leader has taken it in, before it commits: the belief has ended, the replica still shows the grant, and
// the release commits in the background. A later acquire by this node is
// ordered after it, so it is granted at once, with a larger token, and no
// settlement runs.
func TestReleaseOnLeaderReturnsBeforeCommit(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := h.becomeLeader()
			g := h.acquireAndReleaseEarly(k)
			if cause := ended(t, g); !errors.Is(cause, errReleased) {
				t.Fatalf("belief ended with %v, want errReleased", cause)
			}
			if free(h.fsm.View(), k, "x") == nil {
				t.Fatal("the release committed before Release returned: it should only be taken in")
			}
			l.mu.Lock()
			n := len(l.taken)
			l.mu.Unlock()
			if n != 1 {
				t.Fatalf("%d commands waiting on the leader, want the release", n)
			}
			g2 := h.acquire(req(k, "x", true))
			if g2.Token() <= g.Token() {
				t.Fatalf("token %d after %d: not larger", g2.Token(), g.Token())
			}
			if n := h.count(k.ReleaseCmd("", "", 0, 0).Op); n != 1 {
				t.Fatalf("%d releases proposed, want 1", n)
			}
			if err := g2.ReleaseBeforeCommit(context.Background()); err != nil {
				t.Fatalf("second release: %v", err)
			}
			l.commitAll()
			testkit.Eventually(t, "the second release commits", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			h.wantNoReleaseSettled(k)
		})
	}
}

// A release taken in by a leader that then loses its leadership without
// committing it is settled in the background: the name is freed.
func TestReleaseOnLostLeaderIsSettled(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := h.becomeLeader()
			h.acquireAndReleaseEarly(k)
			h.mu.Lock()
			h.leader = nil // the settlement goes through Propose
			h.mu.Unlock()
			l.mu.Lock()
			l.lose = true
			l.mu.Unlock()
			l.commitAll()
			testkit.Eventually(t, "the settled release commits", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			testkit.Eventually(t, "the settlement is counted", waitFor, func() error {
				if got := h.settled(k.label(opRelease)); got != 1 {
					return fmt.Errorf("settlements %q = %v, want 1", k.label(opRelease), got)
				}
				return nil
			})
		})
	}
}

// An early release on a node that does not lead (Submit refuses) commits
// before it returns.
func TestReleaseOffLeaderWaitsForCommit(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			h.acquireAndReleaseEarly(k)
			if err := free(h.fsm.View(), k, "x"); err != nil {
				t.Fatalf("after Release returned: %v", err)
			}
		})
	}
}

// An early release forwarded to a leader on another node returns once that
// leader has taken it in; the part then watches its replica for the commit: once
// the replica (lagging here) shows the grant gone, nothing is settled.
func TestReleaseViaFollowerConfirmedOnReplica(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := h.becomeLeader()
			l.remote = true
			h.acquireAndReleaseEarly(k)
			if free(h.fsm.View(), k, "x") == nil {
				t.Fatal("the release committed before Release returned: it should only be taken in")
			}
			h.lag()
			l.commitAll()
			if free(h.fsm.View(), k, "x") == nil {
				t.Fatal("the lagging replica shows the release")
			}
			h.catchUp()
			testkit.Eventually(t, "the follower sees the release", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			h.part.Close() // joins the follow: it must have ended without settling
			h.wantNoReleaseSettled(k)
		})
	}
}

// A release a remote leader took in but lost (it never commits) is settled
// once the replica has not shown it for the attempt timeout.
func TestReleaseViaFollowerLostIsSettled(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := h.becomeLeader()
			l.remote = true
			h.acquireAndReleaseEarly(k)
			l.mu.Lock()
			l.taken = nil // the leader lost it
			l.mu.Unlock()
			h.mu.Lock()
			h.leader = nil // the settlement goes through Propose
			h.mu.Unlock()
			testkit.Eventually(t, "the settled release commits", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			if got := h.settled(k.label(opRelease)); got != 1 {
				t.Fatalf("settlements %q = %v, want 1", k.label(opRelease), got)
			}
		})
	}
}

// Release (the default) waits for the commit even where the leader would
// take the release in early: once it returns, the replica shows the name
// free, and nothing was handed to Submit.
func TestReleaseWaitsForCommit(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := h.becomeLeader()
			h.acquireAndRelease(k)
			if err := free(h.lead.View(), k, "x"); err != nil {
				t.Fatalf("after Release returned, the leader's replica: %v", err)
			}
			l.mu.Lock()
			n := len(l.taken)
			l.mu.Unlock()
			if n != 0 {
				t.Fatalf("%d commands handed to Submit, want none", n)
			}
		})
	}
}

// An early release a remote leader took in and then lost is delivered
// again as soon as raft reports another leader, long before the attempt
// timeout.
func TestEarlyReleaseRedeliveredOnLeaderChange(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			h.part.o.AttemptTimeout = time.Hour // only the leader change may settle it
			l := h.becomeLeader()
			l.remote = true
			h.acquireAndReleaseEarly(k)
			l.mu.Lock()
			l.taken = nil // the leader lost it
			l.mu.Unlock()
			h.mu.Lock()
			h.leader = nil // the settlement goes through Propose
			h.mu.Unlock()
			h.changeLeader()
			testkit.Eventually(t, "the release delivered again commits", waitFor, func() error { return free(h.fsm.View(), k, "x") })
			if got := h.settled(k.label(opRelease)); got != 1 {
				t.Fatalf("settlements %q = %v, want 1", k.label(opRelease), got)
			}
		})
	}
}
