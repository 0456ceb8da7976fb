package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// Lease is a named leader lease held by this node. Its context is
// cancelled the moment this node's belief in the lease ends: at the
// holder-side deadline of its session (even if no message arrives), when
// the lease goes to another holder, on Resign, or on Shutdown. Work done
// under the lease should run under Context() and pass Token() to every
// protected resource.
type Lease struct {
	belief
	name string
	req  uint64        // the request the grant answered
	slot chan struct{} // this node's slot for the name; see acquire
}

// Name returns the lease's name.
func (l *Lease) Name() string { return l.name }

// Resign ends the lease: the local context is cancelled first (at once,
// whatever ctx), then the release is committed and the lease passes to the
// next waiter. The release is always delivered: if ctx ends before it
// commits, Resign returns ctx's error and the node goes on delivering it
// in the background for as long as its session lives (the session's end
// releases the lease anyway). It returns nil if the lease had already
// ended.
func (l *Lease) Resign(ctx context.Context) error {
	if !l.end(ErrResigned) {
		return nil
	}
	// The slot frees once the release is committed or handed to the
	// background: a later local Campaign that still finds this grant
	// releases it by its request ID too.
	defer func() { <-l.slot }()
	err := l.c.giveUp(ctx, l.sess, l.name, l.req, l.token, "resign")
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrShutdown):
		return err // the session's close releases the lease
	}
	return fmt.Errorf("holdfast: resign %q: the release goes on in the background: %w", l.name, err)
}

// end cancels the lease with cause; it reports whether this call ended it.
func (l *Lease) end(cause error) bool {
	return l.belief.end(cause, time.Time{}, func() { l.c.forgetLease(l) })
}

// Holder describes who holds a named lease.
type Holder struct {
	Node    string // the holder's node name
	NodeID  string
	Session string
	Token   uint64
}

// Leader returns the holder of the named lease and its token from
// the local replica: no network, no lock, no allocation. ok is false when
// nobody holds it. The replica may lag the leader by a little.
func (c *Coordinator) Leader(name string) (h Holder, ok bool) {
	sess, node, nodeID, token, ok := c.fsm.View().HolderNode(name)
	if !ok {
		return Holder{}, false
	}
	return Holder{Node: node, NodeID: nodeID, Session: sess, Token: token}, true
}

// Campaign blocks until this node holds the named lease, or ctx ends.
// Waiters are served first come, first served: a release hands the lease to
// the next waiter directly. If this node's session ends while it waits, it
// campaigns again with its next session.
func (c *Coordinator) Campaign(ctx context.Context, name string) (*Lease, error) {
	return c.acquire(ctx, name, true)
}

// TryAcquire takes the named lease if nobody holds it, and otherwise
// returns an error wrapping ErrLeaseHeld at once.
func (c *Coordinator) TryAcquire(ctx context.Context, name string) (*Lease, error) {
	return c.acquire(ctx, name, false)
}

func (c *Coordinator) acquire(ctx context.Context, name string, wait bool) (*Lease, error) {
	if name == "" || len(name) > fsm.MaxNameLength {
		return nil, fmt.Errorf("holdfast: lease name must have 1 to %d bytes", fsm.MaxNameLength)
	}
	start := time.Now()
	// One local contender per name at a time: the cluster sees one session
	// per node, so two local callers must not share one grant.
	slot := c.localSlot(name)
	if wait {
		select {
		case slot <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, ErrShutdown
		}
	} else {
		select {
		case slot <- struct{}{}:
		default:
			return nil, fmt.Errorf("%w (by this node)", ErrLeaseHeld)
		}
	}
	l, err := c.acquireSlotted(ctx, name, wait)
	if err != nil {
		<-slot
		return nil, err
	}
	l.slot = slot
	c.metrics.acquireWait.WithLabelValues(kindLeader).Observe(time.Since(start).Seconds())
	context.AfterFunc(l.Context(), func() {
		// After a Resign the slot stays taken until the release is
		// applied, so the next local Campaign cannot find the old grant.
		if !errors.Is(context.Cause(l.Context()), ErrResigned) {
			<-slot
		}
	})
	return l, nil
}

// localSlot returns the per-name semaphore local contenders queue on.
func (c *Coordinator) localSlot(name string) chan struct{} {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.slots == nil {
		c.slots = map[string]chan struct{}{}
	}
	ch, ok := c.slots[name]
	if !ok {
		ch = make(chan struct{}, 1)
		c.slots[name] = ch
	}
	return ch
}

// nextRequest waits for this node's session and numbers a new request on
// it. It fails without numbering anything once ctx has ended: nothing was
// sent, so nothing needs settling.
func (c *Coordinator) nextRequest(ctx context.Context) (*session.Session, uint64, error) {
	s, err := c.waitSession(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return s, c.reqSeq.Add(1), nil
}

func (c *Coordinator) acquireSlotted(ctx context.Context, name string, wait bool) (*Lease, error) {
	for {
		s, req, err := c.nextRequest(ctx)
		if err != nil {
			return nil, err
		}
		cmd := fsm.Command{Op: fsm.OpAcquire, Lease: &fsm.LeaseCmd{Name: name, Session: s.ID(), Request: req, Wait: wait}}
		res, err := c.applyRetry(ctx, cmd)
		switch {
		case errors.Is(err, ErrNoSession):
			s.End(ErrSessionExpired)
			continue
		case err != nil:
			if mayHaveCommitted(err) && !errors.Is(err, ErrShutdown) {
				// The leader may have granted or queued it after all.
				c.settle(s, name, req, 0, "acquire")
			}
			return nil, err
		case res.Stale:
			continue // an earlier attempt of this request was refused: ask anew
		case !res.Queued && res.Holder == s.ID() && res.Request != req:
			// An earlier request of this session still holds the grant (a
			// Resign whose release has not committed yet, or a given-up
			// acquire): release that request, then ask again.
			if err := c.giveUp(ctx, s, name, res.Request, res.Token, "acquire"); err != nil {
				return nil, err
			}
			continue
		case !res.Queued && res.Holder == s.ID():
			// Read your writes: the local replica shows the grant before
			// Campaign returns.
			if _, err := c.fsm.Wait(ctx, res.Index); err != nil {
				c.settle(s, name, req, res.Token, "acquire")
				return nil, err
			}
			l, err := c.newLease(s, name, res.Token, req, res.Index)
			if errors.Is(err, errSessionEnded) {
				continue // granted to a session that has just ended: its end releases it
			}
			return l, err
		}
		l, err := c.waitGrant(ctx, s, name, req, res.Index)
		if errors.Is(err, errSessionEnded) {
			continue
		}
		return l, err
	}
}

var errSessionEnded = errors.New("session ended while waiting")

// applyRetry applies an idempotent command (one that carries its session
// and request ID), retrying while its outcome is unknown (the leader was
// lost mid-commit, a connection broke): a retry of a command that did
// commit is answered the same way, so an acquire never mints two tokens.
func (c *Coordinator) applyRetry(ctx context.Context, cmd fsm.Command) (applyResult, error) {
	backoff := 20 * time.Millisecond
	for {
		res, err := c.apply(ctx, cmd)
		if err == nil || errors.Is(err, ErrRejected) || errors.Is(err, ErrNoSession) ||
			errors.Is(err, ErrLeaseHeld) || errors.Is(err, ErrShutdown) || ctx.Err() != nil {
			return res, err
		}
		c.log.Debug("command outcome unknown; retrying", "op", cmd.Op.String(), "error", err)
		if !sleepCtx(ctx, jitter(backoff)) {
			return res, err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// waitGrant waits in the queue until the replica, at or past the index of
// the acquire that queued s (after), shows s holding name for request req.
// Looking only at views from after the acquire, and only at the grant that
// answers this request, keeps a lagging replica from handing back an older
// grant of the same session. If ctx ends first, the request is settled in
// the background (it leaves the queue, or releases a grant that came too
// late) and ctx's error is returned at once.
func (c *Coordinator) waitGrant(ctx context.Context, s *session.Session, name string, req, after uint64) (*Lease, error) {
	for {
		v := c.fsm.View()
		if holder, token, r, ok := v.Grant(name); ok && v.Index() >= after && holder == s.ID() && r == req {
			return c.newLease(s, name, token, req, v.Index())
		}
		select {
		case <-v.Changed():
		case <-s.Context().Done():
			return nil, errSessionEnded
		case <-ctx.Done():
			c.settle(s, name, req, 0, "acquire")
			return nil, ctx.Err()
		}
	}
}

// newLease makes the local handle of a grant and registers it with the
// watcher that ends it when the replica shows another holder. A grant to a
// session whose belief has already ended is refused (errSessionEnded):
// Campaign never returns a lease that is already over.
func (c *Coordinator) newLease(s *session.Session, name string, token, req, index uint64) (*Lease, error) {
	if s.Context().Err() != nil {
		return nil, errSessionEnded
	}
	l := &Lease{belief: newBelief(c, kindLeader, s, token, index), name: name, req: req}
	c.leaseMu.Lock()
	if c.leases == nil {
		c.leaseMu.Unlock()
		l.life.Cancel(ErrShutdown)
		return nil, ErrShutdown
	}
	c.leases[l] = struct{}{}
	c.leaseMu.Unlock()
	context.AfterFunc(l.Context(), func() { c.forgetLease(l) })
	c.kickLeases()
	return l, nil
}

func (c *Coordinator) forgetLease(l *Lease) {
	c.leaseMu.Lock()
	delete(c.leases, l)
	c.leaseMu.Unlock()
}

func (c *Coordinator) kickLeases() {
	select {
	case c.leaseKick <- struct{}{}:
	default:
	}
}

// leaseWatchLoop ends every local lease the replica no longer shows this
// node holding with the same token (it was released, expired, or granted
// to another session).
func (c *Coordinator) leaseWatchLoop() {
	for {
		v := c.fsm.View()
		c.leaseMu.Lock()
		var lost []*Lease
		for l := range c.leases {
			if v.Index() < l.index {
				continue // this replica has not applied the grant yet
			}
			if holder, token, ok := v.Holder(l.name); !ok || holder != l.sess.ID() || token != l.token {
				lost = append(lost, l)
			}
		}
		c.leaseMu.Unlock()
		for _, l := range lost {
			l.end(ErrLeaseLost)
		}
		select {
		case <-c.ctx.Done():
			return
		case <-v.Changed():
		case <-c.leaseKick:
		}
	}
}

// endLeases ends every local lease with cause and stops new ones.
func (c *Coordinator) endLeases(cause error) []*Lease {
	c.leaseMu.Lock()
	var all []*Lease
	for l := range c.leases {
		all = append(all, l)
	}
	c.leases = nil
	c.leaseMu.Unlock()
	for _, l := range all {
		l.end(cause)
	}
	return all
}

// Observe streams the holder of the named lease: the current one first,
// then every change (a zero Holder when nobody holds it). Changes may be
// coalesced, but the latest is never dropped. The channel closes when ctx
// ends or the node shuts down.
func (c *Coordinator) Observe(ctx context.Context, name string) <-chan Holder {
	ch := make(chan Holder, 1)
	if !c.spawn(func() { c.observe(ctx, name, ch) }) {
		close(ch)
	}
	return ch
}

func (c *Coordinator) observe(ctx context.Context, name string, ch chan Holder) {
	streamViews(ctx, c, ch, func(*fsm.View) (Holder, Holder, bool) {
		h, _ := c.Leader(name)
		return h, h, true
	})
}

// reqCounter is embedded in Coordinator for request IDs.
type reqCounter = atomic.Uint64
