package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// ClientOptions are what a Client needs from the node it runs on.
type ClientOptions struct {
	// Log receives the client's logs (nil: discarded).
	Log *slog.Logger
	// Clock measures beliefs; Step is how often a belief's deadline timer
	// re-reads it.
	Clock Clock
	Step  time.Duration
	// TTL is the session time to live; keepalives go every TTL/3.
	TTL time.Duration
	// RPCTimeout bounds one create, close or keepalive.
	RPCTimeout time.Duration
	// Margin is the safety margin a holder keeps (LeaseMargin), MaxDrift
	// the clock rate difference assumed between nodes (a fraction).
	Margin   time.Duration
	MaxDrift float64
	// NewID returns a fresh session ID.
	NewID func() string
	// LeaderKnown reports whether a raft leader is known.
	LeaderKnown func() bool
	// LeaderChanged returns a channel closed when raft next reports a
	// change of leader: the next keepalive then goes at once, so that a new
	// leader hears from every live session soon after it took office (its
	// balancer waits for that; nil: keepalives keep their schedule).
	LeaderChanged func() <-chan struct{}
	// Create commits the create of session id at generation gen (via the
	// leader) and returns the raft index it committed at; an error wrapping
	// ErrStale (with the index) when the cluster already has a session of
	// this node of generation gen or later.
	Create func(ctx context.Context, id string, gen uint64) (uint64, error)
	// Generation returns the highest generation among this node's sessions
	// in the local replica (0: none): the next create goes above it.
	Generation func() uint64
	// Held, if set, returns why this node must not open a session now
	// (its raft storage failing: its replica cannot follow the log), nil
	// when it may. A session is opened only once it returns nil; a session
	// already open is not ended by it (its belief lapses by its own timer
	// if the replica falls behind).
	Held func() error
	// Close commits the close of session id (via the leader).
	Close func(ctx context.Context, id string) error
	// KeepAlive sends one keepalive for session id to the current leader
	// and returns the leader's applied index when it answered; an error
	// wrapping ErrNoSession means the cluster no longer has the session.
	KeepAlive func(ctx context.Context, id string) (uint64, error)
	// Wait returns the local replica's view once it has applied index.
	Wait func(ctx context.Context, index uint64) (*fsm.View, error)
	// Renewing runs before a keepalive's answer extends s, with the view
	// at the answer's index: grants revoked by then stop being extended.
	Renewing func(v *fsm.View, s *Session)
	// Spawn runs f in a goroutine the node joins at shutdown; false: the
	// node is closing and f did not run.
	Spawn func(f func()) bool
	// Metrics observe each answered keepalive's round trip (send to
	// answer) and count the failed or refused ones (nil: none).
	Metrics *Metrics
}

// Client is the holder's side of sessions: it keeps this node in a
// session, opening one, keeping it alive every TTL/3 and, when its belief
// ends, closing it and opening the next. Run runs it.
type Client struct {
	o   ClientOptions
	log *slog.Logger

	gen  uint64 // the generation of the last create sent (Run's goroutine only)
	held bool   // open is held back (Held), logged; Run's goroutine only

	mu      sync.Mutex
	cur     *Session      // current session (nil before the first)
	changed chan struct{} // closed and replaced when cur changes
}

// NewClient returns a client; nothing runs until Run.
func NewClient(o ClientOptions) *Client {
	c := &Client{o: o, log: o.Log, changed: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	o.Metrics.bind(c)
	return c
}

// Current returns the session if its belief is valid, else nil, plus a
// channel closed when the session changes.
func (c *Client) Current() (*Session, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cur
	if s != nil && s.ctx.Err() != nil {
		s = nil
	}
	return s, c.changed
}

// Last returns the most recent session, even one whose belief ended (nil
// before the first).
func (c *Client) Last() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *Client) set(s *Session) {
	c.mu.Lock()
	c.cur = s
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// span is TTL·(1 − MaxDrift) − Margin: how long after a keepalive (or
// the create) is sent its answer lets the holder believe (lease rule 4 in
// docs/ARCHITECTURE.md).
func (c *Client) span() time.Duration {
	return time.Duration(float64(c.o.TTL)*(1-c.o.MaxDrift)) - c.o.Margin
}

// Run keeps this node in a session until ctx ends: it opens one (every
// session's context derives from ctx), keeps it alive, and when it ends
// (lapsed belief or expiry) closes it and opens the next.
func (c *Client) Run(ctx context.Context) {
	for ctx.Err() == nil {
		s := c.open(ctx)
		if s == nil {
			return
		}
		c.set(s)
		c.log.Info("session opened", "session", s.id)
		c.keepAlive(s)
		cause := context.Cause(s.ctx)
		s.End(ErrExpired)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("session ended; opening a new one", "session", s.id, "cause", cause)
		c.closeEnded(ctx, s.id)
	}
}

// closeEnded commits the close of a session this node no longer believes
// in, retrying in the background until it commits or ctx ends. The leader
// would otherwise keep the session, and its shards and leases, until its
// deadline (up to TTL + ExpiryGrace after an election), long after this
// node is back under a new session. Closing is safe: the node's belief in
// the session has ended, and closing a session that already ended is a
// no-op.
func (c *Client) closeEnded(ctx context.Context, id string) {
	c.o.Spawn(func() {
		backoff := 50 * time.Millisecond
		var seen *Session // the last session whose opening woke a retry
		for ctx.Err() == nil {
			if c.o.LeaderKnown() {
				cctx, cancel := context.WithTimeout(ctx, c.o.RPCTimeout)
				err := c.o.Close(cctx, id)
				cancel()
				if err == nil {
					c.log.Debug("ended session closed", "session", id)
					return
				}
				c.log.Debug("closing an ended session failed; retrying", "session", id, "error", err)
			}
			// Retry after the backoff, or at once when a new session has
			// opened: a leader is reachable then.
			next, opened := c.Current()
			if next != nil && next != seen {
				seen = next
				continue
			}
			t := time.NewTimer(pause.Jitter(backoff))
			select {
			case <-ctx.Done():
			case <-opened:
			case <-t.C:
			}
			t.Stop()
			backoff = min(2*backoff, c.o.TTL/3)
		}
	})
}

// open commits a new session, retrying until it succeeds or ctx ends
// (nil). The belief counts from the send of the attempt that committed:
// each attempt waits until a leader is known and is bounded by RPCTimeout,
// so the time spent waiting for a cluster to form (or a leader to be
// elected) is not counted against the session's first TTL.
//
// Each create carries the next generation of this node's sessions (above
// every one the replica shows), so a create that commits late, after a
// newer one, changes nothing, and a newer one ends the older sessions of
// the node (see package fsm). A create that failed here but may still
// commit is closed by its ID in the background, like a session whose
// belief ended: nobody would keep it alive.
func (c *Client) open(ctx context.Context) *Session {
	backoff := 50 * time.Millisecond
	for {
		for !c.mayOpen() {
			if !pause.For(ctx, 20*time.Millisecond) { // poll: raft has no "leader known" channel
				return nil
			}
		}
		s := New(ctx, c.o.NewID(), c.o.TTL, c.o.Clock, c.o.Step)
		c.gen = max(c.gen, c.generation()) + 1
		sent, sentC := time.Now(), c.o.Clock.Now()
		cctx, cancel := context.WithTimeout(ctx, c.o.RPCTimeout)
		index, err := c.o.Create(cctx, s.id, c.gen)
		cancel()
		if err == nil && time.Until(sent.Add(c.span())) > c.o.Margin {
			s.opened(index, sent)
			s.Extend(sent.Add(c.span()), sentC+c.span())
			return s
		}
		switch {
		case err == nil: // committed too late to be believed: let it go, open another
			err = fmt.Errorf("the create took %v to commit", time.Since(sent).Round(time.Millisecond))
			c.closeEnded(ctx, s.id)
		case errors.Is(err, ErrStale):
			// A newer session of this node exists (a late create of an
			// earlier run, say): once the replica shows it, the next
			// create goes above it, at once.
			wctx, wcancel := context.WithTimeout(ctx, c.o.RPCTimeout)
			_, werr := c.o.Wait(wctx, index)
			wcancel()
			if werr == nil {
				continue
			}
		case createMayCommit(err):
			c.closeEnded(ctx, s.id)
		}
		if ctx.Err() != nil {
			return nil
		}
		c.log.Debug("opening a session failed; retrying", "error", err)
		if !pause.For(ctx, pause.Jitter(backoff)) {
			return nil
		}
		backoff = min(2*backoff, c.o.TTL/3)
	}
}

// generation is the highest generation of this node's sessions the replica
// shows.
func (c *Client) generation() uint64 {
	if c.o.Generation == nil {
		return 0
	}
	return c.o.Generation()
}

// createMayCommit reports whether a create that failed with err may still
// have committed (or commit later): anything but a refusal, or a failure
// before any leader took it (no leader, busy, shutting down).
func createMayCommit(err error) bool {
	for _, no := range []error{wire.ErrRejected, wire.ErrNoLeader, wire.ErrBusy, wire.ErrShutdown, ErrStale} {
		if errors.Is(err, no) {
			return false
		}
	}
	return true
}

// mayOpen reports whether a session may be opened now: a leader is known
// and Held (if any) does not hold it back (logged once per holding).
func (c *Client) mayOpen() bool {
	if c.o.Held != nil {
		if err := c.o.Held(); err != nil {
			if !c.held {
				c.held = true
				c.log.Warn("not opening a session", "cause", err)
			}
			return false
		}
		if c.held {
			c.held = false
			c.log.Info("may open a session again")
		}
	}
	return c.o.LeaderKnown()
}

// keepAlive renews s every TTL/3 (with jitter) until its belief lapses, the
// cluster reports it gone, or the node shuts down. One keepalive at most is
// in flight; failures are retried with backoff, following leader changes.
func (c *Client) keepAlive(s *Session) {
	interval := c.o.TTL / 3
	// The first keepalive goes at once: the leader gives shards only to
	// sessions it has heard a keepalive from (a committed create proves
	// nothing: its caller may have given up on it). The renewals after it
	// follow every TTL/3.
	next := time.Now()
	backoff := 20 * time.Millisecond
	for {
		if !c.sleepUntil(s.ctx, next) {
			return
		}
		sent, sentC := time.Now(), c.o.Clock.Now()
		index, err := c.send(s)
		switch {
		case err == nil:
			c.o.Metrics.keepAliveAnswered(time.Since(sent))
			c.renew(s, sent, sentC, index)
			backoff = 20 * time.Millisecond
			next = sent.Add(pause.Jitter(interval))
		case errors.Is(err, ErrNoSession):
			c.failed()
			s.End(ErrExpired)
			return
		default:
			c.failed()
			c.log.Debug("keepalive failed; retrying", "session", s.id, "error", err)
			next = time.Now().Add(pause.Jitter(backoff))
			backoff = min(2*backoff, interval/2)
		}
	}
}

func (c *Client) failed() { c.o.Metrics.keepAliveFailed() }

// KeepAliveOnce sends one keepalive for s and, once it is answered,
// extends the belief as the keepalive loop does (see renew). It returns
// the keepalive's error; the extension may still not happen (the belief
// lapsed first).
func (c *Client) KeepAliveOnce(s *Session) error {
	sent, sentC := time.Now(), c.o.Clock.Now()
	index, err := c.send(s)
	if err != nil {
		return err
	}
	c.renew(s, sent, sentC, index)
	return nil
}

// send sends one keepalive for s, bounded by RPCTimeout and TTL/3, and
// returns the leader's applied index at its answer.
func (c *Client) send(s *Session) (uint64, error) {
	ctx, cancel := context.WithTimeout(s.ctx, min(c.o.RPCTimeout, c.o.TTL/3))
	defer cancel()
	return c.o.KeepAlive(ctx, s.id)
}

// renew extends the belief after a keepalive sent at sent (sentC on the
// session's clock) was answered by a leader whose replica had applied
// index: to sent + span, measured from the send. The extension waits until
// the local replica has applied that index too and Renewing has seen it: a
// shard revoked before the answer is frozen first, so the answer never
// extends it (this is how the owner "hears" of a revoke in its next
// keepalive answer, lease rule 5 in docs/ARCHITECTURE.md). If the replica
// cannot catch up before the current belief ends, the belief lapses.
func (c *Client) renew(s *Session, sent time.Time, sentC time.Duration, index uint64) {
	ctx, cancel := context.WithDeadline(s.ctx, s.ValidUntil())
	v, err := c.o.Wait(ctx, index)
	cancel()
	if err != nil {
		return
	}
	if c.o.Renewing != nil {
		c.o.Renewing(v, s)
	}
	s.Extend(sent.Add(c.span()), sentC+c.span())
}

// sleepUntil waits until t, or until raft reports a change of leader, or
// ctx ends; it reports whether ctx is still alive.
func (c *Client) sleepUntil(ctx context.Context, t time.Time) bool {
	if c.o.LeaderChanged == nil {
		return pause.For(ctx, time.Until(t))
	}
	changed := c.o.LeaderChanged()
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-timer.C:
	}
	return true
}
