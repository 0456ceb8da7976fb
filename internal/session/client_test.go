package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// clientRig is a Client over fake neighbours: a fake clock for beliefs, a
// real replica behind a fake raft, and a keepalive answered by keepAlive.
type clientRig struct {
	c       *Client
	clk     *testkit.Clock
	rep     *replica
	wg      sync.WaitGroup // Spawn's goroutines
	ids     atomic.Int64
	creates atomic.Int64
	closed  chan string
	// createDelay is how far the fake clock moves while a create commits.
	createDelay time.Duration
	keepAlive   func(ctx context.Context, id string) (uint64, error)
	renewing    func(v *fsm.View, s *Session)
	// create, if set, replaces the create's commit (the default commits
	// it to the replica for node "node").
	create func(ctx context.Context, id string, gen uint64) (uint64, error)
}

func newClientRig(t *testing.T, ttl time.Duration) *clientRig {
	r := &clientRig{clk: &testkit.Clock{}, rep: newReplica(), closed: make(chan string, 16)}
	r.clk.Set(time.Hour) // an arbitrary origin
	r.c = NewClient(ClientOptions{
		Clock:       r.clk,
		Step:        time.Millisecond,
		TTL:         ttl,
		RPCTimeout:  time.Minute,
		Margin:      ttl / 15,
		MaxDrift:    0.01,
		NewID:       func() string { return fmt.Sprintf("s%d", r.ids.Add(1)) },
		LeaderKnown: func() bool { return true },
		Create: func(ctx context.Context, id string, gen uint64) (uint64, error) {
			r.creates.Add(1)
			r.clk.Set(r.clk.Now() + r.createDelay)
			if r.create != nil {
				return r.create(ctx, id, gen)
			}
			err := r.rep.apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, NodeID: "node", TTLNanos: int64(ttl), Gen: gen}})
			return r.rep.f.View().Index(), err
		},
		Generation: func() uint64 {
			var g uint64
			for _, s := range r.rep.f.View().Sessions() {
				if s.NodeID == "node" {
					g = max(g, s.Gen)
				}
			}
			return g
		},
		Close: func(_ context.Context, id string) error {
			r.closed <- id
			return nil
		},
		KeepAlive: func(ctx context.Context, id string) (uint64, error) { return r.keepAlive(ctx, id) },
		Wait:      r.rep.f.Wait,
		Renewing: func(v *fsm.View, s *Session) {
			if r.renewing != nil {
				r.renewing(v, s)
			}
		},
		Spawn: func(f func()) bool {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				f()
			}()
			return true
		},
	})
	r.keepAlive = func(context.Context, string) (uint64, error) { return r.rep.f.View().Index(), nil }
	t.Cleanup(r.wg.Wait)
	return r
}

// run starts the client's loop; the returned func stops and joins it.
func (r *clientRig) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// TestOpenBeliefCountsFromSend: a session's first belief ends at the send
// of its create + TTL·(1 − drift) − margin, on the session's clock, however
// long the create took to commit; when the clock passes that instant (a
// suspend) the session and every belief under it end.
func TestOpenBeliefCountsFromSend(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	r.createDelay = time.Second
	sentC := r.clk.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := r.c.open(ctx)
	if s == nil {
		t.Fatal("open returned no session")
	}
	defer s.End(context.Canceled)
	span := r.c.span()
	if want := time.Duration(float64(3*time.Second)*0.99) - 200*time.Millisecond; span != want {
		t.Fatalf("Span = %v, want TTL·(1−drift)−margin = %v", span, want)
	}
	if got, want := s.Remaining(), sentC+span-r.clk.Now(); got != want {
		t.Fatalf("remaining after a 1s create: %v, want %v (counted from the send)", got, want)
	}
	if s.created != r.rep.f.View().Index() || s.sent.IsZero() {
		t.Fatalf("opened session: created %d, sent %v", s.created, s.sent)
	}
	b := NewBelief(s)
	r.clk.Set(sentC + span - time.Nanosecond)
	if b.Observe() != time.Nanosecond || b.Cause() != nil {
		t.Fatalf("belief a nanosecond before its end: %v left, cause %v", b.Observe(), b.Cause())
	}
	r.clk.Set(sentC + span) // the clock reaches the end (after a suspend, say)
	if b.Observe() != 0 || !errors.Is(b.Cause(), ErrExpired) {
		t.Fatalf("belief after the clock passed its end: %v left, cause %v", b.Observe(), b.Cause())
	}
	if s.check() || !errors.Is(context.Cause(s.Context()), ErrExpired) {
		t.Fatal("session still believed after the clock passed its end")
	}
	if s.Extend(time.Now().Add(time.Hour), r.clk.Now()+time.Hour) {
		t.Fatal("a lapsed session was extended")
	}
}

// TestRenewCountsFromSend: an answered keepalive extends the belief to its
// send + Span on the session's clock, not to the answer's arrival + Span,
// and only once the local replica has applied the answer's index and
// Renewing has seen that view.
func TestRenewCountsFromSend(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	s := New(context.Background(), "s1", 3*time.Second, r.clk, time.Millisecond)
	defer s.End(context.Canceled)
	s.Extend(time.Now().Add(time.Second), r.clk.Now()+time.Second)
	sent, sentC := time.Now(), r.clk.Now()
	r.clk.Set(sentC + 500*time.Millisecond) // the answer arrives later

	target := r.rep.f.View().Index() + 1 // the leader's replica is one ahead
	var seen *fsm.View
	r.renewing = func(v *fsm.View, got *Session) {
		seen = v
		if left := got.Remaining(); left != 500*time.Millisecond {
			t.Errorf("belief extended (%v left) before Renewing saw the view", left)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.c.renew(s, sent, sentC, target)
	}()
	select {
	case <-done:
		t.Fatal("renew returned before the replica applied the answer's index")
	case <-time.After(10 * time.Millisecond): // a window for a wrong early return
	}
	if s.Remaining() != 500*time.Millisecond {
		t.Fatal("belief extended before the replica applied the answer's index")
	}
	r.rep.create(t, "other", time.Second) // the replica reaches target
	<-done
	if seen == nil || seen.Index() < target {
		t.Fatalf("Renewing saw %v, want a view at index %d or later", seen, target)
	}
	if got, want := s.Remaining(), r.c.span()-500*time.Millisecond; got != want {
		t.Fatalf("remaining after renew: %v, want send + Span − now = %v", got, want)
	}
	if got, want := s.ValidUntil(), sent.Add(r.c.span()); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", got, want)
	}
}

// TestRenewLapsesWhileReplicaBehind: when the replica cannot reach the
// answer's index before the current belief ends, the answer extends
// nothing and the belief lapses.
func TestRenewLapsesWhileReplicaBehind(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	s := New(context.Background(), "s1", 3*time.Second, r.clk, time.Millisecond)
	defer s.End(context.Canceled)
	s.Extend(time.Now().Add(time.Hour), r.clk.Now()+time.Second)
	sent, sentC := time.Now(), r.clk.Now()
	called := false
	r.renewing = func(*fsm.View, *Session) { called = true }
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.c.renew(s, sent, sentC, r.rep.f.View().Index()+1) // never applied
	}()
	r.clk.Set(sentC + 2*time.Second) // the belief's deadline passes
	<-done
	if called || s.check() {
		t.Fatalf("belief renewed (Renewing called %v) although the replica never caught up", called)
	}
}

// TestKeepAliveLoopEndsOnNoSession: the loop keeps the session alive until
// the cluster says it is gone; then the session ends (ErrExpired), its
// close is committed, and a new session opens.
func TestKeepAliveLoopEndsOnNoSession(t *testing.T) {
	r := newClientRig(t, 30*time.Millisecond) // keepalives every ~10ms
	var calls atomic.Int64
	r.keepAlive = func(context.Context, string) (uint64, error) {
		if calls.Add(1) == 3 {
			return 0, fmt.Errorf("%w (remote)", ErrNoSession)
		}
		return r.rep.f.View().Index(), nil
	}
	stop := r.run()
	defer stop()
	var first *Session
	testkit.Eventually(t, "a session", time.Minute, testkit.Holds(func() bool { first, _ = r.c.Current(); return first != nil }))
	if id := <-r.closed; id != first.ID() {
		t.Fatalf("closed %s, want the ended session %s", id, first.ID())
	}
	if !errors.Is(context.Cause(first.Context()), ErrExpired) {
		t.Fatalf("ended session's cause: %v", context.Cause(first.Context()))
	}
	if n := calls.Load(); n < 3 {
		t.Fatalf("session ended after %d keepalives, want the third to end it", n)
	}
	testkit.Eventually(t, "the next session", time.Minute, testkit.Holds(func() bool {
		s, _ := r.c.Current()
		return s != nil && s != first
	}))
}

// TestKeepAliveLoopRetriesThenLapses: failed keepalives are retried while
// the belief holds; with none answered, the belief ends at its deadline on
// the clock, and the loop closes the session and opens the next.
func TestKeepAliveLoopRetriesThenLapses(t *testing.T) {
	r := newClientRig(t, 30*time.Millisecond)
	var calls atomic.Int64
	r.keepAlive = func(context.Context, string) (uint64, error) {
		calls.Add(1)
		return 0, errors.New("leader unreachable (test)")
	}
	stop := r.run()
	defer stop()
	var first *Session
	testkit.Eventually(t, "a session", time.Minute, testkit.Holds(func() bool { first, _ = r.c.Current(); return first != nil }))
	testkit.Eventually(t, "three keepalive attempts", time.Minute, testkit.Holds(func() bool { return calls.Load() >= 3 }))
	if !first.check() {
		t.Fatal("the belief ended before its deadline on the clock")
	}
	r.clk.Set(r.clk.Now() + time.Hour)
	if id := <-r.closed; id != first.ID() {
		t.Fatalf("closed %s, want the lapsed session %s", id, first.ID())
	}
	testkit.Eventually(t, "the next session", time.Minute, testkit.Holds(func() bool {
		s, _ := r.c.Current()
		return s != nil && s != first
	}))
}

// TestFailedCreateIsClosed: a create that failed at the caller but may
// still commit (its outcome is unknown) is closed by its ID in the
// background, and the next create goes out with the next generation; one
// refused before any leader took it (no leader) is not closed.
func TestFailedCreateIsClosed(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	var gens []uint64
	var mu sync.Mutex
	r.create = func(_ context.Context, id string, gen uint64) (uint64, error) {
		mu.Lock()
		gens = append(gens, gen)
		n := len(gens)
		mu.Unlock()
		switch n {
		case 1:
			return 0, fmt.Errorf("no leader: %w", wire.ErrNoLeader)
		case 2:
			// Committed, but the answer was lost.
			_ = r.rep.apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, NodeID: "node", TTLNanos: 1e9, Gen: gen}})
			return 0, context.DeadlineExceeded
		}
		err := r.rep.apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, NodeID: "node", TTLNanos: 3e9, Gen: gen}})
		return r.rep.f.View().Index(), err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := r.c.open(ctx)
	if s == nil {
		t.Fatal("no session")
	}
	defer s.End(context.Canceled)
	if id := <-r.closed; id != "s2" {
		t.Fatalf("closed %q, want the failed create s2", id)
	}
	select {
	case id := <-r.closed:
		t.Fatalf("also closed %q", id)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gens) != 3 || !(gens[0] < gens[1] && gens[1] < gens[2]) {
		t.Fatalf("generations sent %v, want three increasing", gens)
	}
	if s.ID() != "s3" {
		t.Fatalf("opened %s, want s3", s.ID())
	}
}

// TestStaleCreateGoesAboveTheNewerSession: a create the cluster finds
// older than a session of this node it already has (a replica that lagged
// behind an earlier run's session) is not closed: once the replica shows
// the newer session, the next create goes above it.
func TestStaleCreateGoesAboveTheNewerSession(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	if err := r.rep.apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: "earlier", NodeID: "node", TTLNanos: 1e9, Gen: 7}}); err != nil {
		t.Fatal(err)
	}
	lagging := true
	r.c.o.Generation = func() uint64 {
		if lagging {
			return 0
		}
		return 7
	}
	var gens []uint64
	r.create = func(_ context.Context, id string, gen uint64) (uint64, error) {
		gens = append(gens, gen)
		if gen <= 7 {
			lagging = false // the replica catches up with the answer's index
			return r.rep.f.View().Index(), fmt.Errorf("create: %w", ErrStale)
		}
		err := r.rep.apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, NodeID: "node", TTLNanos: 3e9, Gen: gen}})
		return r.rep.f.View().Index(), err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := r.c.open(ctx)
	if s == nil {
		t.Fatal("no session")
	}
	defer s.End(context.Canceled)
	if len(gens) != 2 || gens[0] != 1 || gens[1] != 8 {
		t.Fatalf("generations sent %v, want [1 8]", gens)
	}
	if _, ok := r.rep.f.View().Session("earlier"); ok {
		t.Fatal("the newer create did not end the earlier session")
	}
	select {
	case id := <-r.closed:
		t.Fatalf("closed %q: a stale create changed nothing", id)
	default:
	}
}
