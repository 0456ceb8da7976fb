package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// The error values the part is given in these tests.
var (
	errShutdown  = wire.ErrShutdown
	errRejected  = wire.ErrRejected
	errNoSession = wire.ErrNoSession
	errHeld      = wire.ErrLeaseHeld
	errReleased  = wire.ErrReleased
	errLost      = wire.ErrLeaseLost
	// errUnknown is a failure whose outcome is unknown (a lost answer).
	errUnknown = errors.New("test: outcome unknown")
)

// waitFor bounds every wait of these tests; generous for a loaded machine.
const waitFor = 10 * time.Second

// fault is what the fake proposer does with one command.
type fault int

const (
	pass        fault = iota // apply it and answer
	drop                     // fail with errUnknown without applying it
	loseAnswer               // apply it, then fail with errUnknown
	cancelAfter              // apply it, then cancel the caller's context (see harness.cancel)
)

// harness is a Manager over fake neighbours: a real fsm.FSM the fake
// proposer applies commands to in order (the leader's), the local replica
// (fsm, another fsm.FSM that applies the same log, at once unless the
// harness lags), real sessions numbered by the harness, and real session
// beliefs.
type harness struct {
	t    *testing.T
	fsm  *fsm.FSM // the local replica the part reads
	lead *fsm.FSM // the leader's replica, whose results the proposer answers
	part *Manager
	reg  *prometheus.Registry
	m    *Metrics
	ends *session.EndMetrics // the grants' ends, which m counts
	wait *prometheus.HistogramVec

	mu       sync.Mutex
	index    uint64
	sess     *session.Session
	all      []*session.Session // every session opened
	sessN    int
	proposed []fsm.Command
	// ask answers the part's asks to the leader (nil: no leader to ask).
	ask func(ctx context.Context, r wire.WaitGrantRequest) (wire.WaitGrantReply, error)
	// lagging holds committed entries back from the local replica until
	// catchUp; pending are the entries held back.
	lagging bool
	pending []*raft.Log
	// fault decides what happens to each command (nil: pass).
	fault func(cmd fsm.Command) fault
	// cancel is the caller context's cancel used by cancelAfter.
	cancel context.CancelFunc
	// leader, if set, is the fake leader Proposer.Accept hands releases to
	// (nil: this node does not lead; see submit_test.go).
	leader *fakeLeader
	// changed is closed (and replaced) by changeLeader: raft reporting a
	// new leader (Options.LeaderChanged).
	changed chan struct{}

	reqSeq atomic.Uint64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, fsm: fsm.New(), lead: fsm.New(), reg: prometheus.NewRegistry(), changed: make(chan struct{})}
	h.ends = session.NewEndMetrics(Lease.String(), Semaphore.String())
	h.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "acquire_wait"}, []string{"kind"})
	h.m = NewMetrics(map[Kind]prometheus.ObserverVec{
		Lease:     h.wait.MustCurryWith(prometheus.Labels{"kind": Lease.String()}),
		Semaphore: h.wait.MustCurryWith(prometheus.Labels{"kind": Semaphore.String()}),
	}, h.ends)
	h.newSession()
	h.part = New(Options{
		View:           h.fsm.View,
		NextRequest:    h.nextRequest,
		AskLeader:      h.askLeader,
		Proposer:       harnessProposer{h},
		AttemptTimeout: time.Second,
		LeaderChanged:  h.leaderChanged,
		Metrics:        h.m,
	})
	t.Cleanup(func() {
		h.part.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, s := range h.all {
			s.End(errShutdown)
		}
	})
	return h
}

// harnessProposer is the part's Proposer over the harness: Commit is
// propose, Accept is submit.
type harnessProposer struct{ h *harness }

func (p harnessProposer) Commit(ctx context.Context, cmd fsm.Command) (Result, error) {
	return p.h.propose(ctx, cmd)
}

func (p harnessProposer) Accept(ctx context.Context, cmd fsm.Command) (func(context.Context) (Result, error), error) {
	return p.h.submit(ctx, cmd)
}

// newSession opens a session in the replica and makes it this node's
// current one; the caller ends the previous one (every session ends at
// cleanup).
func (h *harness) newSession() *session.Session {
	h.mu.Lock()
	h.sessN++
	id := fmt.Sprintf("s%d", h.sessN)
	h.sess = session.New(context.Background(), id, time.Minute, session.SystemClock(), time.Second)
	h.all = append(h.all, h.sess)
	s := h.sess
	h.mu.Unlock()
	h.commit(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, Node: "n-" + id, NodeID: "id-" + id, TTLNanos: int64(time.Minute),
		Level: fsm.CommandLevel}})
	return s
}

// other opens a session of another node in the replica (not this node's).
func (h *harness) other(id string) {
	h.commit(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, Node: "n-" + id, NodeID: "id-" + id, TTLNanos: int64(time.Minute),
		Level: fsm.CommandLevel}})
}

func (h *harness) session() *session.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sess
}

func (h *harness) nextRequest(ctx context.Context) (*session.Session, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if h.part != nil && h.part.ctx.Err() != nil {
		return nil, 0, errShutdown
	}
	return h.session(), h.reqSeq.Add(1), nil
}

// commit applies cmd to the replica at the next index, as raft would, and
// returns the state machine's result.
func (h *harness) commit(cmd fsm.Command) (fsm.Result, uint64) {
	h.t.Helper()
	data, err := fsm.Encode(cmd)
	if err != nil {
		h.t.Fatalf("encode %v: %v", cmd.Op, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.index++
	r, _ := h.lead.Apply(&raft.Log{Type: raft.LogCommand, Index: h.index, Data: data}).(fsm.Result)
	h.pending = append(h.pending, &raft.Log{Type: raft.LogCommand, Index: h.index, Data: data})
	if !h.lagging {
		h.applyPending()
	}
	return r, h.index
}

// askLeader is the part's Options.AskLeader: h.ask, or no leader.
func (h *harness) askLeader(ctx context.Context, r wire.WaitGrantRequest) (wire.WaitGrantReply, error) {
	h.mu.Lock()
	ask := h.ask
	h.mu.Unlock()
	if ask == nil {
		return wire.WaitGrantReply{}, wire.ErrNoLeader
	}
	return ask(ctx, r)
}

// lag holds later commits back from the local replica (a follower that
// has not heard of them yet) until catchUp.
func (h *harness) lag() {
	h.mu.Lock()
	h.lagging = true
	h.mu.Unlock()
}

// catchUp applies every held-back commit to the local replica and stops
// lagging.
func (h *harness) catchUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lagging = false
	h.applyPending()
}

// catchUpTo applies the held-back commits up to index to the local
// replica; it goes on lagging.
func (h *harness) catchUpTo(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.pending) > 0 && h.pending[0].Index <= index {
		h.fsm.Apply(h.pending[0])
		h.pending = h.pending[1:]
	}
}

// applyPending applies the held-back entries to the local replica; h.mu
// is held.
func (h *harness) applyPending() {
	for _, l := range h.pending {
		h.fsm.Apply(l)
	}
	h.pending = nil
}

// propose is the fake one-attempt proposer: it applies the command to the
// replica (unless the fault says otherwise) and maps refusals the way the
// coordinator does.
func (h *harness) propose(ctx context.Context, cmd fsm.Command) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err // nobody waits for the answer: not proposed
	}
	h.mu.Lock()
	h.proposed = append(h.proposed, cmd)
	faultOf, cancel, leader := h.fault, h.cancel, h.leader
	h.mu.Unlock()
	leader.commitAll() // the commands taken in before this one come first
	f := pass
	if faultOf != nil {
		f = faultOf(cmd)
	}
	if f == drop {
		return Result{}, errUnknown
	}
	r, index := h.commit(cmd)
	switch f {
	case loseAnswer:
		return Result{}, errUnknown
	case cancelAfter:
		cancel()
		return Result{}, ctx.Err()
	}
	res := Result{Index: index, Token: r.Token, Holder: r.Holder, Request: r.Request, Queued: r.Queued, Stale: r.Stale}
	switch {
	case r.Err == nil:
		return res, nil
	case errors.Is(r.Err, fsm.ErrNoSession):
		return res, fmt.Errorf("%w: %w: %w", errRejected, errNoSession, r.Err)
	case errors.Is(r.Err, fsm.ErrLeaseHeld):
		return res, fmt.Errorf("%w: %w: %w", errRejected, errHeld, r.Err)
	}
	return res, fmt.Errorf("%w: %w", errRejected, r.Err)
}

// count returns how many commands with op were proposed.
func (h *harness) count(op fsm.Op) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.proposed {
		if c.Op == op {
			n++
		}
	}
	return n
}

func (h *harness) setFault(f func(cmd fsm.Command) fault) {
	h.mu.Lock()
	h.fault = f
	h.mu.Unlock()
}

// settled returns the settlement counter for op label.
func (h *harness) settled(label string) float64 {
	return testutil.ToFloat64(h.m.settlements.WithLabelValues(label))
}

// wantNoReleaseSettled fails the test if a release of kind k was settled.
func (h *harness) wantNoReleaseSettled(k Kind) {
	h.t.Helper()
	if got := h.settled(k.label(opRelease)); got != 0 {
		h.t.Fatalf("settlements %q = %v, want 0", k.label(opRelease), got)
	}
}

// waits returns how many acquire waits of kind were observed.
func (h *harness) waits(k Kind) uint64 {
	h.t.Helper()
	var m dto.Metric
	if err := h.wait.WithLabelValues(k.String()).(prometheus.Metric).Write(&m); err != nil {
		h.t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// ended waits until g's belief ends and returns its cause.
func ended(t *testing.T, g *Grant) error {
	t.Helper()
	ctx := g.Belief().Context()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(waitFor):
		t.Fatalf("%s %q token %d: belief did not end", g.kind, g.name, g.token)
		return nil
	}
}

// free reports an error while the replica shows anything held or queued
// under name.
func free(v *fsm.View, k Kind, name string) error {
	if k == Semaphore {
		if s, ok := v.Semaphore(name); ok && (len(s.Holders) > 0 || len(s.Waiters) > 0) {
			return fmt.Errorf("semaphore %q: holders %v, waiters %v", name, s.Holders, s.Waiters)
		}
		return nil
	}
	if l, ok := v.Lease(name); ok {
		return fmt.Errorf("lease %q: held by %s (request %d), waiters %v", name, l.Holder, l.Request, l.Waiters)
	}
	return nil
}

// req is a request of kind k for name (a semaphore of limit 2).
func req(k Kind, name string, wait bool) Request {
	r := Request{Kind: k, Name: name, Wait: wait}
	if k == Semaphore {
		r.Limit = 2
	}
	return r
}
