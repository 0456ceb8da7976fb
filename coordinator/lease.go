package coordinator

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/session"
)

// Lease is a named lease held by this node (one holder per name). Its context is
// cancelled the moment this node's belief in the lease ends: at the
// holder-side deadline of its session (even if no message arrives), when
// the lease goes to another holder, on Release, or on Shutdown. Work done
// under the lease should run under Context() and pass Token() to every
// protected resource.
type Lease struct {
	belief // a copy of the grant's (they share its life)
	g      *leases.Grant
}

// Name returns the lease's name.
func (l *Lease) Name() string { return l.g.Name() }

// Release ends the lease: the local context is cancelled first (at once,
// whatever ctx), then the release is committed and the lease passes to the
// next waiter. The release is always delivered: if ctx ends before it
// commits, Release returns ctx's error and the node goes on delivering it
// in the background for as long as its session lives (the session's end
// releases the lease anyway). It returns nil if the lease had already
// ended.
func (l *Lease) Release(ctx context.Context) error { return l.g.Release(ctx) }

// Holder returns who holds the named lease (node, address, session and
// the grant's token) from the local replica: no network, no lock, no
// allocation. ok is false when nobody holds it. The replica may lag the
// leader by a little, also behind this node's own Acquire, which returns on
// the leader's answer; call Sync first for an answer that reflects every
// change committed before the call.
func (c *Coordinator) Holder(name string) (h Holder, ok bool) {
	sess, node, nodeID, token, ok := c.fsm.View().HolderNode(name)
	if !ok {
		return Holder{}, false
	}
	return holderAt(c.fsm.View(), Holder{Node: node, NodeID: nodeID, Session: sess, Token: token}), true
}

// Acquire blocks until this node holds the named lease, or ctx ends.
// Waiters are served first come, first served: a release hands the lease to
// the next waiter directly. If this node's session ends while it waits, it
// asks again with its next session.
func (c *Coordinator) Acquire(ctx context.Context, name string) (*Lease, error) {
	return c.acquire(ctx, name, true)
}

// TryAcquire takes the named lease if nobody holds it, and otherwise
// returns an error wrapping ErrLeaseHeld at once.
func (c *Coordinator) TryAcquire(ctx context.Context, name string) (*Lease, error) {
	return c.acquire(ctx, name, false)
}

func (c *Coordinator) acquire(ctx context.Context, name string, wait bool) (*Lease, error) {
	g, err := c.leases.Acquire(ctx, leases.Request{Kind: leases.Leader, Name: name, Wait: wait})
	if err != nil {
		return nil, err
	}
	return &Lease{belief: *beliefOf(g), g: g}, nil
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

// applyRetry applies an idempotent command (one that carries its session
// and request ID), retrying while its outcome is unknown (the leader was
// lost mid-commit, a connection broke): a retry of a command that did
// commit is answered the same way, so an acquire never mints two tokens.
func (c *Coordinator) applyRetry(ctx context.Context, cmd fsm.Command) (applyResult, error) {
	backoff := 20 * time.Millisecond
	for {
		res, err := c.apply(ctx, cmd)
		if err == nil || errors.Is(err, errRejected) || errors.Is(err, errNoSession) ||
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
		h, _ := c.Holder(name)
		return h, h, true
	})
}

// reqCounter is embedded in Coordinator for request IDs.
type reqCounter = atomic.Uint64
