package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// session is this node's current session incarnation as the node believes
// it: valid until validUntil, measured on the coordinator's Clock (which
// counts suspended time). A timer cancels ctx at that instant even if no
// message ever arrives (lease rule 4 in docs/ARCHITECTURE.md), and every read of the belief
// (check) looks at the clock too, so a node resumed from suspend sees the
// belief gone at once; every lease context derives from ctx.
type session struct {
	id      string
	ttl     time.Duration
	created uint64
	sent    time.Time // when the create command was sent: the belief's base
	ctx     context.Context
	cancel  context.CancelCauseFunc
	clock   Clock
	step    time.Duration // how often the timer re-reads the clock

	mu          sync.Mutex
	validUntil  time.Time     // the deadline on Go's clock (for reports and waits)
	validUntilC time.Duration // the deadline on clock: the one that counts
	timer       *bootTimer
}

func newSession(parent context.Context, id string, ttl time.Duration, clock Clock, step time.Duration) *session {
	s := &session{id: id, ttl: ttl, clock: clock, step: step}
	s.ctx, s.cancel = context.WithCancelCause(parent)
	return s
}

// extend moves the belief forward to until (never back), untilC being the
// same instant on the session's clock, and re-arms the timer; it reports
// false when the belief had already lapsed.
func (s *session) extend(until time.Time, untilC time.Duration) bool {
	if !s.check() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	if untilC <= s.validUntilC {
		return true
	}
	s.validUntil, s.validUntilC = until, untilC
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = afterBoot(s.clock, untilC, s.step, func() { s.cancel(ErrSessionExpired) })
	return true
}

// check ends the belief if the clock has passed its deadline (a resume
// from suspend, before the timer noticed); it reports whether the belief
// still holds.
func (s *session) check() bool {
	_, ok := s.leftAt(s.clock.Now())
	return ok
}

// remaining is how long the belief has left (0 once it lapsed).
func (s *session) remaining() time.Duration {
	left, _ := s.leftAt(s.clock.Now())
	return left
}

// leftAt is how long the belief has left at now on the session's clock; it
// ends the belief (false) once now is past its deadline.
func (s *session) leftAt(now time.Duration) (time.Duration, bool) {
	if s.ctx.Err() != nil {
		return 0, false
	}
	s.mu.Lock()
	until := s.validUntilC
	s.mu.Unlock()
	if until == 0 {
		return 0, true // not extended yet
	}
	if now >= until {
		s.end(ErrSessionExpired)
		return 0, false
	}
	return until - now, true
}

// end cancels the belief now with cause and stops the timer.
func (s *session) end(cause error) {
	s.cancel(cause)
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
}

// beliefUntil is how long a keepalive sent at sent lets the holder believe:
// sent + TTL·(1 − maxDrift) − margin (lease rule 4 in docs/ARCHITECTURE.md).
func (c *Coordinator) beliefUntil(sent time.Time) time.Time {
	return sent.Add(c.beliefSpan())
}

// beliefSpan is TTL·(1 − maxDrift) − margin: how long after a keepalive is
// sent its answer lets the holder believe.
func (c *Coordinator) beliefSpan() time.Duration {
	ttl := c.cfg.SessionTTL
	return time.Duration(float64(ttl)*(1-c.cfg.MaxClockDrift)) - c.cfg.LeaseMargin
}

// currentSession returns the session if its belief is valid, else nil,
// plus a channel closed when the session changes.
func (c *Coordinator) currentSession() (*session, <-chan struct{}) {
	c.sessMu.Lock()
	defer c.sessMu.Unlock()
	s := c.sess
	if s != nil && s.ctx.Err() != nil {
		s = nil
	}
	return s, c.sessChanged
}

func (c *Coordinator) setSession(s *session) {
	c.sessMu.Lock()
	c.sess = s
	close(c.sessChanged)
	c.sessChanged = make(chan struct{})
	c.sessMu.Unlock()
}

// waitSession blocks until this node has a valid session.
func (c *Coordinator) waitSession(ctx context.Context) (*session, error) {
	for {
		s, changed := c.currentSession()
		if s != nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, ErrShutdown
		case <-changed:
		}
	}
}

// sessionLoop keeps this node in a session: it opens one, keeps it alive,
// and when it ends (lapsed belief or expiry) closes it and opens the next.
func (c *Coordinator) sessionLoop() {
	for c.sessCtx.Err() == nil {
		s := c.openSession()
		if s == nil {
			return
		}
		c.setSession(s)
		c.log.Info("session opened", "session", s.id)
		c.keepAlive(s)
		cause := context.Cause(s.ctx)
		s.end(ErrSessionExpired)
		if c.sessCtx.Err() != nil {
			return
		}
		c.log.Warn("session ended; opening a new one", "session", s.id, "cause", cause)
		c.closeEnded(s.id)
	}
}

// closeEnded commits the close of a session this node no longer believes
// in, retrying in the background until it commits or the node leaves. The
// leader would otherwise keep the session, and its shards and leases,
// until its deadline (up to SessionTTL + ExpiryGrace after an election),
// long after this node is back under a new session. Closing is safe: the
// node's belief in the session has ended, and closing a session that
// already ended is a no-op.
func (c *Coordinator) closeEnded(id string) {
	c.spawn(func() {
		backoff := 50 * time.Millisecond
		var seen *session // the last session whose opening woke a retry
		for c.sessCtx.Err() == nil {
			if addr, _ := c.leaderRPCAddr(); addr != "" {
				ctx, cancel := context.WithTimeout(c.sessCtx, c.cfg.RPCTimeout)
				_, err := c.apply(ctx, fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: id}})
				cancel()
				if err == nil {
					c.log.Debug("ended session closed", "session", id)
					return
				}
				c.log.Debug("closing an ended session failed; retrying", "session", id, "error", err)
			}
			// Retry after the backoff, or at once when a new session has
			// opened: a leader is reachable then.
			next, opened := c.currentSession()
			if next != nil && next != seen {
				seen = next
				continue
			}
			t := time.NewTimer(jitter(backoff))
			select {
			case <-c.sessCtx.Done():
			case <-opened:
			case <-t.C:
			}
			t.Stop()
			backoff = min(2*backoff, c.cfg.SessionTTL/3)
		}
	})
}

// openSession commits a new session, retrying until it succeeds or the
// node shuts down (nil). The belief counts from the send of the attempt
// that committed: each attempt waits until a leader is known and is bounded
// by RPCTimeout, so the time spent waiting for a cluster to form (or a
// leader to be elected) is not counted against the session's first TTL.
func (c *Coordinator) openSession() *session {
	backoff := 50 * time.Millisecond
	for {
		for addr, _ := c.leaderRPCAddr(); addr == ""; addr, _ = c.leaderRPCAddr() {
			if !sleepCtx(c.sessCtx, 20*time.Millisecond) { // poll: raft has no "leader known" channel
				return nil
			}
		}
		s := newSession(c.sessCtx, newID(), c.cfg.SessionTTL, c.clock, c.clockStep())
		sent, sentC := time.Now(), c.clock.Now()
		cmd := &fsm.SessionCmd{ID: s.id, Node: c.cfg.NodeName, NodeID: c.id, TTLNanos: int64(c.cfg.SessionTTL)}
		c.shardSessionCmd(cmd)
		ctx, cancel := context.WithTimeout(c.sessCtx, c.cfg.RPCTimeout)
		res, err := c.apply(ctx, fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
		cancel()
		if err == nil && time.Until(c.beliefUntil(sent)) > c.cfg.LeaseMargin {
			s.created, s.sent = res.Index, sent
			s.extend(c.beliefUntil(sent), sentC+c.beliefSpan())
			return s
		}
		if err == nil { // committed too late to be believed: let it go, open another
			err = fmt.Errorf("the create took %v to commit", time.Since(sent).Round(time.Millisecond))
			c.closeEnded(s.id)
		}
		if c.sessCtx.Err() != nil {
			return nil
		}
		c.log.Debug("opening a session failed; retrying", "error", err)
		if !sleepCtx(c.sessCtx, jitter(backoff)) {
			return nil
		}
		backoff = min(2*backoff, c.cfg.SessionTTL/3)
	}
}

// keepAlive renews s every TTL/3 (with jitter) until its belief lapses, the
// cluster reports it gone, or the node shuts down. One keepalive at most is
// in flight; failures are retried with backoff, following leader changes.
func (c *Coordinator) keepAlive(s *session) {
	interval := c.cfg.SessionTTL / 3
	// The belief counts from when the create was sent, so the first renewal
	// does too: a slow create must not eat into the margin for retries.
	next := s.sent.Add(jitter(interval))
	backoff := 20 * time.Millisecond
	for {
		if !sleepUntil(s.ctx, next) {
			return
		}
		sent, sentC := time.Now(), c.clock.Now()
		index, err := c.sendKeepAlive(s)
		switch {
		case err == nil:
			c.metrics.keepAliveLatency.Observe(time.Since(sent).Seconds())
			c.renew(s, sent, sentC, index)
			backoff = 20 * time.Millisecond
			next = sent.Add(jitter(interval))
		case errors.Is(err, ErrNoSession):
			c.metrics.keepAliveFailures.Inc()
			s.end(ErrSessionExpired)
			return
		default:
			c.metrics.keepAliveFailures.Inc()
			c.log.Debug("keepalive failed; retrying", "session", s.id, "error", err)
			next = time.Now().Add(jitter(backoff))
			backoff = min(2*backoff, interval/2)
		}
	}
}

// sendKeepAlive sends one keepalive to the current leader and returns the
// leader's applied index at the moment it answered.
func (c *Coordinator) sendKeepAlive(s *session) (uint64, error) {
	ctx, cancel := context.WithTimeout(s.ctx, min(c.cfg.RPCTimeout, c.cfg.SessionTTL/3))
	defer cancel()
	addr, self := c.leaderRPCAddr()
	switch {
	case self:
		return c.lessor.keepAlive(ctx, s.id)
	case addr == "":
		return 0, ErrNoLeader
	}
	var rep keepAliveReply
	err := fromRemote(c.trans.Call(ctx, addr, methodKeepAlive, keepAliveRequest{Session: s.id}, &rep))
	return rep.Index, err
}

// renew extends the belief after a keepalive sent at sent (sentC on the
// session's clock) was answered by
// a leader whose replica had applied index. The extension waits until the
// local replica has applied that index too and the shard leases have seen
// it: a shard revoked before the answer is frozen first, so the answer
// never extends it (this is how the owner "hears" of a revoke in its next
// keepalive answer, lease rule 5 in docs/ARCHITECTURE.md). If the replica cannot catch up
// before the current belief ends, the belief lapses.
func (c *Coordinator) renew(s *session, sent time.Time, sentC time.Duration, index uint64) {
	s.mu.Lock()
	until := s.validUntil
	s.mu.Unlock()
	ctx, cancel := context.WithDeadline(s.ctx, until)
	v, err := c.fsm.Wait(ctx, index)
	cancel()
	if err != nil {
		return
	}
	c.shards.sync(v, s)
	s.extend(c.beliefUntil(sent), sentC+c.beliefSpan())
}

type (
	keepAliveRequest = wire.KeepAliveRequest
	keepAliveReply   = wire.KeepAliveReply
)

// jitter returns d ± 10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/10 + rand.N(d/5+1)
}

// sleepUntil waits until t or ctx ends; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	return sleepCtx(ctx, time.Until(t))
}
