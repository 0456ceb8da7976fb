package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

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
func (c *Coordinator) currentSession() (*session.Session, <-chan struct{}) {
	c.sessMu.Lock()
	defer c.sessMu.Unlock()
	s := c.sess
	if s != nil && s.Context().Err() != nil {
		s = nil
	}
	return s, c.sessChanged
}

func (c *Coordinator) setSession(s *session.Session) {
	c.sessMu.Lock()
	c.sess = s
	close(c.sessChanged)
	c.sessChanged = make(chan struct{})
	c.sessMu.Unlock()
}

// waitSession blocks until this node has a valid session.
func (c *Coordinator) waitSession(ctx context.Context) (*session.Session, error) {
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
		c.log.Info("session opened", "session", s.ID())
		c.keepAlive(s)
		cause := context.Cause(s.Context())
		s.End(ErrSessionExpired)
		if c.sessCtx.Err() != nil {
			return
		}
		c.log.Warn("session ended; opening a new one", "session", s.ID(), "cause", cause)
		c.closeEnded(s.ID())
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
		var seen *session.Session // the last session whose opening woke a retry
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
func (c *Coordinator) openSession() *session.Session {
	backoff := 50 * time.Millisecond
	for {
		for addr, _ := c.leaderRPCAddr(); addr == ""; addr, _ = c.leaderRPCAddr() {
			if !sleepCtx(c.sessCtx, 20*time.Millisecond) { // poll: raft has no "leader known" channel
				return nil
			}
		}
		s := session.New(c.sessCtx, newID(), c.cfg.SessionTTL, c.clock, c.clockStep())
		sent, sentC := time.Now(), c.clock.Now()
		cmd := &fsm.SessionCmd{ID: s.ID(), Node: c.cfg.NodeName, NodeID: c.id, TTLNanos: int64(c.cfg.SessionTTL)}
		c.shardSessionCmd(cmd)
		ctx, cancel := context.WithTimeout(c.sessCtx, c.cfg.RPCTimeout)
		res, err := c.apply(ctx, fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
		cancel()
		if err == nil && time.Until(c.beliefUntil(sent)) > c.cfg.LeaseMargin {
			s.SetOpened(res.Index, sent)
			s.Extend(c.beliefUntil(sent), sentC+c.beliefSpan())
			return s
		}
		if err == nil { // committed too late to be believed: let it go, open another
			err = fmt.Errorf("the create took %v to commit", time.Since(sent).Round(time.Millisecond))
			c.closeEnded(s.ID())
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
func (c *Coordinator) keepAlive(s *session.Session) {
	interval := c.cfg.SessionTTL / 3
	// The belief counts from when the create was sent, so the first renewal
	// does too: a slow create must not eat into the margin for retries.
	next := s.Sent().Add(jitter(interval))
	backoff := 20 * time.Millisecond
	for {
		if !sleepUntil(s.Context(), next) {
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
			s.End(ErrSessionExpired)
			return
		default:
			c.metrics.keepAliveFailures.Inc()
			c.log.Debug("keepalive failed; retrying", "session", s.ID(), "error", err)
			next = time.Now().Add(jitter(backoff))
			backoff = min(2*backoff, interval/2)
		}
	}
}

// sendKeepAlive sends one keepalive to the current leader and returns the
// leader's applied index at the moment it answered.
func (c *Coordinator) sendKeepAlive(s *session.Session) (uint64, error) {
	ctx, cancel := context.WithTimeout(s.Context(), min(c.cfg.RPCTimeout, c.cfg.SessionTTL/3))
	defer cancel()
	addr, self := c.leaderRPCAddr()
	switch {
	case self:
		return c.lessor.keepAlive(ctx, s.ID())
	case addr == "":
		return 0, ErrNoLeader
	}
	var rep keepAliveReply
	err := fromRemote(c.trans.Call(ctx, addr, methodKeepAlive, keepAliveRequest{Session: s.ID()}, &rep))
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
func (c *Coordinator) renew(s *session.Session, sent time.Time, sentC time.Duration, index uint64) {
	until := s.ValidUntil()
	ctx, cancel := context.WithDeadline(s.Context(), until)
	v, err := c.fsm.Wait(ctx, index)
	cancel()
	if err != nil {
		return
	}
	c.shards.Sync(v, s)
	s.Extend(c.beliefUntil(sent), sentC+c.beliefSpan())
}

type keepAliveRequest struct {
	Session string `msgpack:"session"`
}

type keepAliveReply struct {
	// Index is the leader's applied index when it answered.
	Index uint64 `msgpack:"index"`
}

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
