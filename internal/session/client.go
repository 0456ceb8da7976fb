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
	// Held, if set, returns why this node must not open a session now
	// (its raft storage failing: its replica cannot follow the log), nil
	// when it may. A session is opened only once it returns nil; a session
	// already open is not ended by it (its belief lapses by its own timer
	// if the replica falls behind).
	Held func() error
	// Create commits the create of session id (via the leader) and returns
	// the raft index it committed at.
	Create func(ctx context.Context, id string) (uint64, error)
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

	held bool // open is held back (Held), logged; Run's goroutine only

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
func (c *Client) open(ctx context.Context) *Session {
	backoff := 50 * time.Millisecond
	for {
		for !c.mayOpen() {
			if !pause.For(ctx, 20*time.Millisecond) { // poll: raft has no "leader known" channel
				return nil
			}
		}
		s := New(ctx, c.o.NewID(), c.o.TTL, c.o.Clock, c.o.Step)
		sent, sentC := time.Now(), c.o.Clock.Now()
		cctx, cancel := context.WithTimeout(ctx, c.o.RPCTimeout)
		index, err := c.o.Create(cctx, s.id)
		cancel()
		if err == nil && time.Until(sent.Add(c.span())) > c.o.Margin {
			s.opened(index, sent)
			s.Extend(sent.Add(c.span()), sentC+c.span())
			return s
		}
		if err == nil { // committed too late to be believed: let it go, open another
			err = fmt.Errorf("the create took %v to commit", time.Since(sent).Round(time.Millisecond))
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
	// The belief counts from when the create was sent, so the first renewal
	// does too: a slow create must not eat into the margin for retries.
	next := s.sent.Add(pause.Jitter(interval))
	backoff := 20 * time.Millisecond
	for {
		if !sleepUntil(s.ctx, next) {
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

// sleepUntil waits until t or ctx ends; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	return pause.For(ctx, time.Until(t))
}
