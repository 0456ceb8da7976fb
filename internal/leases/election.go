package leases

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/internal/pause"
)

// Term is a held lease as an election sees it.
type Term interface {
	// Token is the grant's fencing token.
	Token() uint64
	// Context ends when this node stops believing it holds the lease.
	Context() context.Context
	// Err is nil while the lease is held, then why it ended.
	Err() error
	// Checkpoint is nil while the lease is held with enough time left.
	Checkpoint() error
	// Release gives the lease up.
	Release(ctx context.Context) error
}

// Election is a leader election over one lease name, in the style of
// client-go's: acquire, run a term while the lease is held, acquire again.
type Election[L Term] struct {
	// Name is the lease's name (for the logs).
	Name string
	// Acquire blocks until this node holds the lease, or ctx ends.
	Acquire func(ctx context.Context) (L, error)
	// OnStartedLeading runs each term, with a context that ends when the
	// lease or Run's context ends.
	OnStartedLeading func(ctx context.Context, lease L)
	// OnStoppedLeading (optional) is called after each term, once
	// OnStartedLeading has returned, with the lease's Err.
	OnStoppedLeading func(cause error)
	// OnNewLeader (optional) is called with each new holder, in token
	// order, never twice at once: the holders Observe streams, and this
	// node itself (Self) as each term starts, since an acquire returns on
	// the leader's answer and the local replica may show the grant later,
	// or, if this node is cut off at once, never. A holder is new when its
	// token is above the last one reported.
	OnNewLeader func(Holder)
	// Self is the holder a term's lease names: this node (required with
	// OnNewLeader).
	Self func(L) Holder
	// Observe streams the lease's holders until ctx ends, then closes the
	// channel (required with OnNewLeader).
	Observe func(ctx context.Context) <-chan Holder
	// Sync (optional) returns once the local replica reflects every
	// command committed before it was called; Run's holder stream starts
	// only after it, so that a grant released before Run began (this
	// node's own Release included, which the replica may not show yet) is
	// never reported as a new holder.
	Sync func(ctx context.Context) error
	// Check (optional) holds the term's lease while it runs.
	Check *Check[L]
	// Shutdown is the error of an Acquire on a node shutting down: Run
	// returns it.
	Shutdown error
	// ReleaseTimeout bounds the release of the lease after ctx ended.
	ReleaseTimeout time.Duration
	// BackoffMin and BackoffMax bound the pause after a failed Acquire
	// (zero: 100ms and 5s).
	BackoffMin, BackoffMax time.Duration
	// Log receives the election's logs (nil: discarded).
	Log *slog.Logger

	reported *reporter // with OnNewLeader
}

// Run acquires the lease until ctx ends, running one term each time it is
// granted and acquiring it again whenever a term ends for any reason but
// ctx. When ctx ends during a term, Run cancels the term's context, waits
// for OnStartedLeading to return, then releases the lease. It returns nil
// when ctx ends, or Shutdown. Other Acquire errors are logged and retried
// with backoff.
func (e *Election[L]) Run(ctx context.Context) error {
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if e.BackoffMin == 0 {
		e.BackoffMin, e.BackoffMax = 100*time.Millisecond, 5*time.Second
	}
	if e.OnNewLeader != nil {
		e.reported = &reporter{f: e.OnNewLeader}
		octx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.notifyNewLeaders(octx)
		}()
		defer func() { stop(); <-done }()
	}
	backoff := e.BackoffMin
	for {
		l, err := e.Acquire(ctx)
		switch {
		case ctx.Err() != nil:
			if err == nil { // granted as ctx ended: no term, hand it on
				e.release(ctx, l)
			}
			return nil
		case errors.Is(err, e.Shutdown):
			return e.Shutdown
		case err != nil:
			e.Log.Warn("election: acquiring the lease failed; retrying", "lease", e.Name, "error", err, "retry_in", backoff)
			if !pause.For(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, e.BackoffMax)
			continue
		}
		backoff = e.BackoffMin
		e.term(ctx, l)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// term runs one term: OnStartedLeading under l until the lease or ctx
// ends, then (if ctx ended) the release, then OnStoppedLeading.
func (e *Election[L]) term(ctx context.Context, l L) {
	e.Log.Info("started leading", "lease", e.Name, "token", l.Token())
	e.Check.set(l, true)
	if e.reported != nil {
		e.reported.report(e.Self(l))
	}
	termCtx, cancel := context.WithCancel(l.Context())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		e.OnStartedLeading(termCtx, l)
	}()
	select {
	case <-l.Context().Done():
	case <-ctx.Done():
	}
	cancel()
	<-returned
	var zero L
	e.Check.set(zero, false)
	if l.Err() == nil { // ctx ended: hand the lease on
		e.release(ctx, l)
	}
	cause := l.Err()
	e.Log.Info("stopped leading", "lease", e.Name, "token", l.Token(), "cause", cause)
	if e.OnStoppedLeading != nil {
		e.OnStoppedLeading(cause)
	}
}

// release releases l after ctx ended, bounded by ReleaseTimeout.
func (e *Election[L]) release(ctx context.Context, l L) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ReleaseTimeout)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		e.Log.Warn("releasing the lease failed; it ends with this node's session", "lease", e.Name, "error", err)
	}
}

// notifyNewLeaders calls OnNewLeader with each new holder until ctx ends,
// reading the holders once Sync returns (if set).
func (e *Election[L]) notifyNewLeaders(ctx context.Context) {
	if e.Sync != nil && e.Sync(ctx) != nil {
		return // ctx ended, or the node is shutting down
	}
	for h := range e.Observe(ctx) {
		e.reported.report(h)
	}
}

// reporter calls f with each holder whose token is above the last one
// reported, one call at a time.
type reporter struct {
	mu   sync.Mutex
	last uint64
	f    func(Holder)
}

func (r *reporter) report(h Holder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.Token > r.last {
		r.last = h.Token
		r.f(h)
	}
}

// Check is a readiness check tied to an election's terms; the zero value
// leads nothing. It is safe for concurrent use.
type Check[L Term] struct {
	mu   sync.Mutex
	term L
	held bool
}

// Ready returns notLeading while no term runs, else the term's Checkpoint.
func (c *Check[L]) Ready(notLeading error) error {
	c.mu.Lock()
	l, held := c.term, c.held
	c.mu.Unlock()
	if !held {
		return notLeading
	}
	return l.Checkpoint()
}

func (c *Check[L]) set(l L, held bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.term, c.held = l, held
	c.mu.Unlock()
}
