package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// ErrNotLeading is returned by ElectionCheck.Ready while RunElection does not
// hold the lease.
var ErrNotLeading = errors.New("holdfast: not holding the lease")

// ElectionConfig configures RunElection: the lease to acquire and the
// callbacks of a leader election in the style of client-go's.
type ElectionConfig struct {
	// Name is the lease's name. Required.
	Name string
	// OnStartedLeading is called in a goroutine of its own each time this
	// node gains the lease, with a context that ends when the lease ends
	// (or RunElection's context does) and the lease: pass lease.Token() to
	// every protected resource. It must return soon after ctx ends:
	// RunElection waits for it before it releases the lease, calls
	// OnStoppedLeading or acquires again, so one node never runs two
	// terms at once. Required.
	OnStartedLeading func(ctx context.Context, lease *Lease)
	// OnStoppedLeading, if set, is called after each term, once
	// OnStartedLeading has returned, with why the term ended: ErrReleased
	// when RunElection's context ended (the lease was then released), or the
	// lease's cause (ErrSessionExpired, ErrLeaseLost, ErrShutdown).
	OnStoppedLeading func(cause error)
	// OnNewLeader, if set, is called with each new holder of the lease,
	// this node included, in the order the local replica sees them (a
	// holder is new when its token is). It runs in a goroutine of its own,
	// concurrently with the other callbacks, and may lag them a little.
	OnNewLeader func(holder Holder)
	// Check, if set, is kept up to date by RunElection: its Ready reports nil
	// only while this node leads. Serve it as a readiness probe to send
	// traffic to the leader only.
	Check *ElectionCheck
}

// ElectionCheck is a readiness check tied to holding RunElection's lease; the
// zero value is ready to use (and not ready: it leads nothing). It is safe
// for concurrent use.
type ElectionCheck struct {
	mu    sync.Mutex
	lease *Lease
}

// Ready returns nil while RunElection holds the lease with at least
// Session.LeaseMargin left; otherwise an error wrapping ErrNotLeading, or the
// lease's Checkpoint error (ErrLeaseExpiring, ErrLeaseLost) when it is
// about to end or has just ended.
func (lc *ElectionCheck) Ready() error {
	lc.mu.Lock()
	l := lc.lease
	lc.mu.Unlock()
	if l == nil {
		return ErrNotLeading
	}
	return l.Checkpoint()
}

func (lc *ElectionCheck) set(l *Lease) {
	if lc == nil {
		return
	}
	lc.mu.Lock()
	lc.lease = l
	lc.mu.Unlock()
}

// RunElection acquires the lease cfg.Name until ctx ends, calling
// cfg.OnStartedLeading for each term this node holds it and acquiring it
// again whenever a term ends for any reason but ctx (its session expired,
// the lease was lost). When ctx ends during a term, RunElection cancels the
// term's context, waits for OnStartedLeading to return, then releases the lease so
// that the next waiter takes over at once. It returns nil when ctx ends,
// ErrShutdown when the coordinator shuts down, or at once an error for an
// invalid cfg. Other Acquire errors are logged and retried with backoff.
func (c *Coordinator) RunElection(ctx context.Context, cfg ElectionConfig) error {
	switch {
	case cfg.Name == "" || len(cfg.Name) > fsm.MaxNameLength:
		return fmt.Errorf("%w: LeaderConfig.Name must have 1 to %d bytes", ErrInvalidConfig, fsm.MaxNameLength)
	case cfg.OnStartedLeading == nil:
		return fmt.Errorf("%w: LeaderConfig.OnStartedLeading is required", ErrInvalidConfig)
	}
	if cfg.OnNewLeader != nil {
		octx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.notifyNewLeaders(octx, cfg.Name, cfg.OnNewLeader)
		}()
		defer func() { stop(); <-done }()
	}
	backoff := runLeaderBackoffMin
	for {
		l, err := c.Acquire(ctx, cfg.Name)
		switch {
		case ctx.Err() != nil:
			if err == nil { // granted as ctx ended: no term, hand it on
				c.resign(ctx, l)
			}
			return nil
		case errors.Is(err, ErrShutdown):
			return ErrShutdown
		case err != nil:
			c.log.Warn("campaign failed; retrying", "lease", cfg.Name, "error", err, "retry_in", backoff)
			if !sleepCtx(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, runLeaderBackoffMax)
			continue
		}
		backoff = runLeaderBackoffMin
		c.leaderTerm(ctx, cfg, l)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// RunElection's backoff between failed campaigns.
const (
	runLeaderBackoffMin = 100 * time.Millisecond
	runLeaderBackoffMax = 5 * time.Second
)

// leaderTerm runs one term of RunElection: OnStartedLeading under l until
// the lease or ctx ends, then (if ctx ended) the release, then
// OnStoppedLeading.
func (c *Coordinator) leaderTerm(ctx context.Context, cfg ElectionConfig, l *Lease) {
	c.log.Info("started leading", "lease", cfg.Name, "token", l.Token())
	cfg.Check.set(l)
	termCtx, cancel := context.WithCancel(l.Context())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		cfg.OnStartedLeading(termCtx, l)
	}()
	select {
	case <-l.Done():
	case <-ctx.Done():
	}
	cancel()
	<-returned
	cfg.Check.set(nil)
	if l.Err() == nil { // ctx ended: hand the lease on
		c.resign(ctx, l)
	}
	cause := l.Err()
	c.log.Info("stopped leading", "lease", cfg.Name, "token", l.Token(), "cause", cause)
	if cfg.OnStoppedLeading != nil {
		cfg.OnStoppedLeading(cause)
	}
}

// resign releases l after ctx ended, bounded by RPCTimeout.
func (c *Coordinator) resign(ctx context.Context, l *Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RPCTimeout)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		c.log.Warn("releasing the lease failed; it ends with this node's session", "lease", l.Name(), "error", err)
	}
}

// notifyNewLeaders calls f with each new holder of the lease name until
// ctx ends.
func (c *Coordinator) notifyNewLeaders(ctx context.Context, name string, f func(Holder)) {
	var last uint64
	for h := range c.Observe(ctx, name) {
		if h.Token != 0 && h.Token != last {
			last = h.Token
			f(h)
		}
	}
}
