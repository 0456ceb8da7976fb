package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// kindSemaphore labels semaphore permits in the lease metrics.
const kindSemaphore = "semaphore"

var (
	// ErrSemaphoreFull is returned by TryAcquireSemaphore when every permit
	// of the semaphore is held (or others wait for one).
	ErrSemaphoreFull = errors.New("holdfast: semaphore has no free permit")
	// ErrSemaphoreLimit is returned when a semaphore is asked for with a
	// limit other than the one its current holders and waiters use (the
	// first acquire of a free semaphore fixes its limit).
	ErrSemaphoreLimit = errors.New("holdfast: semaphore limit differs from its holders'")
)

// Permit is one of the N permits of a named semaphore, held by this node.
// Like a Lease, its context is cancelled the moment this node's belief in
// the permit ends: at the holder-side deadline of its session (even if no
// message arrives), when the replica no longer shows the permit, on
// Release, or on Shutdown. Each permit has its own fencing token: pass
// Token() to every protected resource.
type Permit struct {
	belief
	name  string
	limit int
	req   uint64 // the request the grant answered
}

// Name returns the semaphore's name.
func (p *Permit) Name() string { return p.name }

// Limit returns the semaphore's number of permits.
func (p *Permit) Limit() int { return p.limit }

// Release gives the permit up: the local context is cancelled first (cause
// ErrResigned), then the release is committed and the freed permit goes to
// the first waiter. If ctx ends before the release commits, Release
// returns ctx's error and the node goes on delivering it in the background
// for as long as its session lives. It returns nil if the permit had
// already ended.
func (p *Permit) Release(ctx context.Context) error {
	if !p.belief.end(ErrResigned, time.Time{}, nil) {
		return nil
	}
	err := p.c.giveUpSem(ctx, p.sess, p.name, p.req, p.token)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrShutdown):
		return err // the session's close frees the permit
	}
	return fmt.Errorf("holdfast: release permit of %q: the release goes on in the background: %w", p.name, err)
}

// AcquireSemaphore blocks until this node holds one of the limit permits
// of the named semaphore, or ctx ends. Waiters are served first come,
// first served. The first acquire of a semaphore nobody holds or waits for
// fixes its limit; asking with another limit while it is in use fails with
// an error wrapping ErrSemaphoreLimit. A node may hold several permits of
// one semaphore (one per call). If this node's session ends while it
// waits, it asks again with its next session. If ctx ends while the
// request may have been committed, the request is given up in the
// background, so a cancelled call never leaves a permit held.
func (c *Coordinator) AcquireSemaphore(ctx context.Context, name string, limit int) (*Permit, error) {
	return c.acquireSem(ctx, name, limit, true)
}

// TryAcquireSemaphore takes a permit of the named semaphore if one is free
// and nobody waits, and otherwise returns an error wrapping
// ErrSemaphoreFull at once.
func (c *Coordinator) TryAcquireSemaphore(ctx context.Context, name string, limit int) (*Permit, error) {
	return c.acquireSem(ctx, name, limit, false)
}

// Semaphore returns the holders of the named semaphore's permits, in grant
// (token) order, from the local replica (which may lag the leader by a
// little); nil when nobody holds one.
func (c *Coordinator) Semaphore(name string) []Holder {
	s, ok := c.fsm.View().Semaphore(name)
	if !ok {
		return nil
	}
	out := make([]Holder, 0, len(s.Holders))
	for _, h := range s.Holders {
		out = append(out, Holder{Node: h.Node, NodeID: h.NodeID, Session: h.Session, Token: h.Token})
	}
	return out
}

func (c *Coordinator) acquireSem(ctx context.Context, name string, limit int, wait bool) (*Permit, error) {
	if name == "" || len(name) > fsm.MaxNameLength {
		return nil, fmt.Errorf("holdfast: semaphore name must have 1 to %d bytes", fsm.MaxNameLength)
	}
	if limit < 1 || limit > fsm.MaxSemLimit {
		return nil, fmt.Errorf("holdfast: semaphore limit must be 1 to %d", fsm.MaxSemLimit)
	}
	start := time.Now()
	for {
		s, req, err := c.nextRequest(ctx)
		if err != nil {
			return nil, err
		}
		cmd := fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: name, Session: s.id, Request: req,
			Limit: uint32(limit), Wait: wait}}
		res, err := c.applyRetry(ctx, cmd)
		var p *Permit
		switch {
		case errors.Is(err, ErrNoSession):
			s.end(ErrSessionExpired)
			continue
		case err != nil:
			if mayHaveCommitted(err) && !errors.Is(err, ErrShutdown) {
				c.settleSem(s, name, req, 0, "sem-acquire") // it may have been granted or queued after all
			}
			return nil, semError(err)
		case res.Stale:
			continue // a newer request of this node came first: ask anew
		case !res.Queued:
			// Read your writes: the local replica shows the permit before
			// the call returns.
			if _, err := c.fsm.Wait(ctx, res.Index); err != nil {
				c.settleSem(s, name, req, res.Token, "sem-acquire")
				return nil, err
			}
			p, err = c.newPermit(s, name, limit, res.Token, req, res.Index)
		default:
			p, err = c.waitPermit(ctx, s, name, limit, req, res.Index)
		}
		if errors.Is(err, errSessionEnded) {
			continue // the session's end freed the request
		}
		if err == nil {
			c.metrics.acquireWait.WithLabelValues(kindSemaphore).Observe(time.Since(start).Seconds())
		}
		return p, err
	}
}

// semError maps a refusal of the state machine (returned locally, or
// forwarded with its own wire code) to ErrSemaphoreFull or
// ErrSemaphoreLimit, with the state machine's detail ("2 of 2 permits of x
// held") and ErrRejected still in the chain.
func semError(err error) error {
	for _, k := range []struct{ fsmErr, ours error }{{fsm.ErrSemFull, ErrSemaphoreFull}, {fsm.ErrSemLimit, ErrSemaphoreLimit}} {
		if errors.Is(err, k.fsmErr) {
			_, detail, _ := strings.Cut(err.Error(), k.fsmErr.Error())
			return &semRefusal{kind: k.ours, detail: detail, err: err}
		}
	}
	return err
}

// semRefusal is a refused semaphore acquire: kind, then the detail.
type semRefusal struct {
	kind   error
	detail string
	err    error // the refusal as the state machine or the leader gave it
}

func (e *semRefusal) Error() string { return e.kind.Error() + e.detail }

// Unwrap returns the kind and the original refusal (which wraps
// ErrRejected).
func (e *semRefusal) Unwrap() []error { return []error{e.kind, e.err} }

// waitPermit waits in the queue until the replica, at or past the index
// of the acquire that queued request req (after), shows it holding a
// permit. If ctx ends first, the request is settled in the background (it
// leaves the queue, or frees a permit that came too late) and ctx's error
// is returned at once.
func (c *Coordinator) waitPermit(ctx context.Context, s *session, name string, limit int, req, after uint64) (*Permit, error) {
	for {
		v := c.fsm.View()
		if token, ok := v.SemPermit(name, s.id, req); ok && v.Index() >= after {
			return c.newPermit(s, name, limit, token, req, v.Index())
		}
		select {
		case <-v.Changed():
		case <-s.ctx.Done():
			return nil, errSessionEnded
		case <-ctx.Done():
			c.settleSem(s, name, req, 0, "sem-acquire")
			return nil, ctx.Err()
		}
	}
}

// newPermit makes the local handle of a grant and starts the watcher that
// ends it when the replica no longer shows it. A grant to a session whose
// belief has already ended is refused (errSessionEnded).
func (c *Coordinator) newPermit(s *session, name string, limit int, token, req, index uint64) (*Permit, error) {
	if s.ctx.Err() != nil {
		return nil, errSessionEnded
	}
	p := &Permit{belief: newBelief(c, kindSemaphore, s, token, index), name: name, limit: limit, req: req}
	if !c.spawn(func() { c.watchPermit(p) }) {
		p.belief.end(ErrShutdown, time.Time{}, nil)
		return nil, ErrShutdown
	}
	return p, nil
}

// watchPermit ends p once the replica, at or past p's grant, no longer
// shows it (released, freed with an expired session), or at shutdown.
func (c *Coordinator) watchPermit(p *Permit) {
	for {
		v := c.fsm.View()
		if v.Index() >= p.index {
			if token, ok := v.SemPermit(p.name, p.sess.id, p.req); !ok || token != p.token {
				p.belief.end(ErrLeaseLost, time.Time{}, nil)
				return
			}
		}
		select {
		case <-p.ctx.Done():
			return
		case <-c.ctx.Done():
			p.belief.end(ErrShutdown, time.Time{}, nil)
			return
		case <-v.Changed():
		}
	}
}

// semGiveUpCmd is the release of request req of session s for the named
// semaphore (token: only that permit, or 0 for whatever it holds).
func semGiveUpCmd(s *session, name string, req, token uint64) fsm.Command {
	return fsm.Command{Op: fsm.OpSemRelease, Sem: &fsm.SemCmd{Name: name, Session: s.id, Request: req, Token: token}}
}

// settleSem gives request req up in the background (see settle.go); op
// labels the metric.
func (c *Coordinator) settleSem(s *session, name string, req, token uint64, op string) {
	if c.metrics != nil {
		c.metrics.settlements.WithLabelValues(op).Inc()
	}
	c.settleCmd(s, semGiveUpCmd(s, name, req, token), name, req)
}

// giveUpSem releases request req under ctx (retrying while its outcome is
// unknown); if that is not confirmed before ctx ends, it goes on in the
// background.
func (c *Coordinator) giveUpSem(ctx context.Context, s *session, name string, req, token uint64) error {
	_, err := c.applyRetry(ctx, semGiveUpCmd(s, name, req, token))
	if mayHaveCommitted(err) && !errors.Is(err, ErrShutdown) && s.ctx.Err() == nil {
		c.settleSem(s, name, req, token, "sem-release")
	}
	if errors.Is(err, ErrNoSession) {
		return nil // the session is gone: so is everything it held
	}
	return err
}
