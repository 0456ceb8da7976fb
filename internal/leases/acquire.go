package leases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// Grant is this node's handle on one grant: a lease or a permit.
type Grant struct {
	p      *Manager
	kind   Kind
	name   string
	limit  int
	req    uint64 // the request the grant answered
	token  uint64
	index  uint64 // the raft index at which the grant was seen
	sess   *session.Session
	belief *session.Belief
	slot   *slot      // the local slot of a lease name; see Acquire
	value  valueState // the holder value (value.go)
}

// Belief returns this node's belief in the grant: its context, its end.
func (g *Grant) Belief() *session.Belief { return g.belief }

// Name returns the lease's or semaphore's name.
func (g *Grant) Name() string { return g.name }

// Limit returns the semaphore's number of permits (0 for a lease).
func (g *Grant) Limit() int { return g.limit }

// Token returns the grant's fencing token.
func (g *Grant) Token() uint64 { return g.token }

// SessionID returns the ID of the session the grant belongs to.
func (g *Grant) SessionID() string { return g.sess.ID() }

// Request returns the request the grant answered.
func (g *Grant) Request() uint64 { return g.req }

// end ends the belief with cause; it reports whether this call ended it.
func (g *Grant) end(cause error) bool { return g.belief.End(cause, time.Time{}, nil) }

// Release gives the grant up: the belief ends first (cause
// wire.ErrReleased, at once, whatever ctx), then the release is committed,
// and Release returns once it has: every later read index (a Sync on any
// node) and every later acquire, by any node, finds the grant released.
// A release forwarded to a leader that loses office is sent again to the
// next one as soon as this node learns of the change. The release is
// always delivered: if ctx ends before it commits, Release returns an
// error wrapping ctx's and the release goes on in the background for as
// long as the session lives (the session's end frees the grant anyway). It
// returns nil if the grant had already ended, and wire.ErrShutdown (the
// session's close frees the grant) once the node shuts down.
func (g *Grant) Release(ctx context.Context) error { return g.release(ctx, false) }

// ReleaseBeforeCommit gives the grant up as Release does, but (with
// Proposer.Accept) returns as soon as raft on the leader has taken the
// release in, before it commits: it is ordered before every later command
// of this node, and nothing more. Other nodes may still see the grant held
// after it returned, and if the leader loses office before the commit the
// release is delivered again (as soon as this node learns of the change)
// and commits later. See "Releases before their commit" in the package doc.
func (g *Grant) ReleaseBeforeCommit(ctx context.Context) error { return g.release(ctx, true) }

func (g *Grant) release(ctx context.Context, early bool) error {
	return g.releaseWith(ctx, early, wire.ErrReleased)
}

// releaseWith is release with the belief's cause (one wrapping
// wire.ErrReleased).
func (g *Grant) releaseWith(ctx context.Context, early bool, cause error) error {
	if !g.end(cause) {
		return nil
	}
	// The level check scans the sessions once per view: only when a local
	// caller waits, not on every release.
	if g.slot != nil && !early && g.slot.waiting() && g.p.o.View().SessionsAtLevel(fsm.HandoverLevel) {
		if w := g.slot.claim(); w != nil {
			return g.handOver(ctx, w)
		}
	}
	if g.slot != nil {
		// The slot frees once the release is committed or handed to the
		// background: a later local acquire that still finds this grant
		// releases it by its request ID too.
		defer g.p.freeSlot(g.slot)
	}
	if early && g.p.submitRelease(ctx, g.kind, g.sess, g.name, g.req, g.token, g.index) {
		return nil // the leader has it, ahead of this node's next command
	}
	err := g.p.giveUp(ctx, g.kind, g.sess, g.name, g.req, g.token, opRelease)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wire.ErrShutdown):
		return err
	case g.kind == Semaphore:
		return fmt.Errorf("holdfast: release permit of %q: the release goes on in the background: %w", g.name, err)
	}
	return fmt.Errorf("holdfast: release %q: the release goes on in the background: %w", g.name, err)
}

// Acquire blocks until this node holds a grant for r, or (r.Wait false)
// fails at once when none is free; it also fails when ctx ends. Waiters are
// served first come, first served. If this node's session ends while the
// request waits, it asks again with the next session. If ctx ends while
// the request may have been committed, the request is settled in the
// background, so a cancelled call never leaves a grant held.
func (p *Manager) Acquire(ctx context.Context, r Request) (*Grant, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	start := p.o.Now()
	var sl *slot
	var h handed
	if r.Kind == Lease {
		// One local contender per name at a time: the cluster sees one
		// session per node, so two local callers must not share one grant.
		sl = p.localSlot(r.Name)
		var err error
		if h, err = p.takeSlot(ctx, sl, r); err != nil {
			return nil, err
		}
	}
	g, err := p.acquire(ctx, r, sl, h)
	if err != nil {
		if sl != nil {
			p.freeSlot(sl)
		}
		return nil, err
	}
	p.o.Metrics.waited(r.Kind, p.o.Now().Sub(start))
	if sl != nil {
		g.slot = sl
		ctx := g.belief.Context()
		context.AfterFunc(ctx, func() {
			// After a Release the slot stays taken until the release is
			// applied (or handed over with it), so the next local acquire
			// cannot find the old grant.
			if !errors.Is(context.Cause(ctx), wire.ErrReleased) {
				p.freeSlot(sl)
			}
		})
	}
	return g, nil
}

// acquire asks for r until it is granted or fails, once per session. If a
// handover already asked for it (first.made), it goes on from that answer.
// It marks sl's turn answered (nil: a semaphore) once the cluster granted or
// queued the request.
func (p *Manager) acquire(ctx context.Context, r Request, sl *slot, first handed) (*Grant, error) {
	for {
		s, req, res, err := first.s, first.req, first.res, first.err
		if !first.made {
			sl.ask()
			if !first.reuse {
				if s, req, err = p.o.NextRequest(ctx); err != nil {
					return nil, err
				}
			}
			res, err = p.retry(ctx, r.Kind.acquireCmd(r, s.ID(), req))
		}
		first = handed{}
		switch {
		case errors.Is(err, wire.ErrNoSession):
			s.End(session.ErrExpired) // the cluster no longer has the session
			continue
		case err != nil:
			if p.mayHaveCommitted(err) && !errors.Is(err, wire.ErrShutdown) {
				// The leader may have granted or queued it after all.
				p.settleAcquire(ctx, r, s, req)
			}
			return nil, err
		case res.Stale:
			continue // an earlier attempt of this request was refused: ask anew
		case r.Kind == Lease && !res.Queued && res.Holder == s.ID() && res.Request != req:
			// An earlier request of this session still holds the lease (a
			// Release whose release has not committed yet, or a given-up
			// acquire): release that request, then ask again.
			if err := p.giveUp(ctx, r.Kind, s, r.Name, res.Request, res.Token, opAcquire); err != nil {
				return nil, err
			}
			continue
		}
		sl.answered()
		var g *Grant
		if r.Kind.grantedNow(res, s.ID()) {
			// The leader committed the grant and answered it: its token,
			// session and request are settled at res.Index, so the grant
			// is believed at once, without waiting for the local replica
			// to apply that index (see "Granted on the leader's answer"
			// in the package doc).
			g, err = p.newGrant(r, s, res.Token, req, res.Index)
		} else {
			g, err = p.waitGrant(ctx, r, s, req, res.Index)
		}
		if errors.Is(err, errSessionEnded) {
			continue // the session's end freed the request
		}
		return g, err
	}
}

// waitGrant waits in the queue until the replica, at or past the index of
// the acquire that queued request req (after), shows the grant that
// answers it, or the leader answers that its replica does (askLeader).
// Looking only at views from after the acquire, and only at the grant that
// answers this request, keeps a lagging replica from handing back an older
// grant of the same session. If ctx ends first, the request is settled in
// the background (it leaves the queue, or releases a grant that came too
// late) and ctx's error is returned at once.
func (p *Manager) waitGrant(ctx context.Context, r Request, s *session.Session, req, after uint64) (*Grant, error) {
	lead := make(chan wire.WaitGrantReply, 1)
	if p.o.AskLeader != nil {
		actx, stop := context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(p.ctx, stop)() // Close joins the ask
		p.spawn(func() { p.askLeader(actx, r, s, req, after, lead) })
	}
	for {
		v := p.o.View()
		if token, ok := r.Kind.granted(v, r.Name, s.ID(), req); ok && v.Index() >= after {
			return p.newGrant(r, s, token, req, v.Index())
		}
		select {
		case rep := <-lead:
			return p.newGrant(r, s, rep.Token, req, rep.Index)
		case <-v.Changed():
		case <-s.Context().Done():
			return nil, errSessionEnded
		case <-ctx.Done():
			p.settleAcquire(ctx, r, s, req)
			return nil, ctx.Err()
		}
	}
}

// newGrant makes the local handle of a grant and registers it with the
// watch loop. A grant to a session whose belief has already ended is
// refused (errSessionEnded): an acquire never returns a grant that is
// already over.
func (p *Manager) newGrant(r Request, s *session.Session, token, req, index uint64) (*Grant, error) {
	if s.Context().Err() != nil {
		return nil, errSessionEnded
	}
	g := &Grant{p: p, kind: r.Kind, name: r.Name, req: req, token: token, index: index, sess: s}
	g.value.cur = r.Value
	if r.Kind == Semaphore {
		g.limit = r.Limit
	}
	g.belief = session.NewBelief(s)
	p.o.Metrics.followEnd(r.Kind, g.belief)
	if !p.register(g) {
		g.end(wire.ErrShutdown)
		return nil, wire.ErrShutdown
	}
	return g, nil
}
