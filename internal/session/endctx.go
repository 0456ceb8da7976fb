package session

import (
	"context"
	"sync"
	"time"
)

// endCtx is a context that ends when its parent (its session's context)
// ends or when end is called, whichever comes first, with the Err and
// context.Cause a context.WithCancelCause child of the parent would have.
// It costs no channel and no entry in the parent until something needs
// one: while nobody waits on it, Err reads its own end and the parent's.
// Done, a context derived from it, context.AfterFunc on it, or
// context.Cause after end make a real child (of the parent, or, once ended
// by end, an already cancelled context carrying end's cause) that it
// delegates to from then on; a derived context is then the real child's
// child, cancelled with it, without a goroutine. A node owns tens of
// thousands of shard leases whose contexts nobody waits on; each would
// otherwise hold a cancel context, its channel and an entry in the session
// context's children.
type endCtx struct {
	sess  *Session // the parent is its context
	mu    sync.Mutex
	cause error    // end's cause: nil while live, or if the parent ended first
	real  *realCtx // the real child, once needed
}

// realCtx is an endCtx's real child and its cancel function.
type realCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// end ends the context with cause unless it already ended (by end or with
// its parent); it reports whether this call ended it.
func (c *endCtx) end(cause error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endLocked(cause)
}

func (c *endCtx) endLocked(cause error) bool {
	if c.errLocked() != nil {
		return false
	}
	c.cause = cause
	if c.real != nil {
		c.real.cancel(cause)
	}
	return true
}

// causeOf is context.Cause(c), without making the real child for it.
func (c *endCtx) causeOf() error {
	c.mu.Lock()
	if c.real == nil {
		defer c.mu.Unlock()
		if c.cause != nil {
			return c.cause
		}
		if c.sess.ctx.Err() == nil {
			return nil
		}
		return context.Cause(c.sess.ctx)
	}
	c.mu.Unlock()
	return context.Cause(c)
}

// realLocked returns the real child, making it if needed; c.mu is held.
func (c *endCtx) realLocked() context.Context {
	if c.real == nil {
		r := &realCtx{}
		if c.cause != nil {
			// Ended by end: a cancelled context with its cause, registered
			// nowhere (the parent may end later with another cause).
			r.ctx, r.cancel = context.WithCancelCause(context.Background())
			r.cancel(c.cause)
		} else {
			r.ctx, r.cancel = context.WithCancelCause(c.sess.ctx)
		}
		c.real = r
	}
	return c.real.ctx
}

func (c *endCtx) errLocked() error {
	switch {
	case c.real != nil:
		return c.real.ctx.Err()
	case c.cause != nil:
		return context.Canceled
	default:
		return c.sess.ctx.Err()
	}
}

// Deadline returns the parent's deadline.
func (c *endCtx) Deadline() (time.Time, bool) { return c.sess.ctx.Deadline() }

// Done returns a channel closed when the context ends; the first call
// makes it.
func (c *endCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.realLocked().Done()
}

// Err returns nil while the context holds, then context.Canceled (or the
// parent's error, if the parent ended first).
func (c *endCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

// Value returns the parent's value for key; once the context ended by end
// (or made its real child), the child answers first, so context.Cause
// finds end's cause.
func (c *endCtx) Value(key any) any {
	c.mu.Lock()
	var inner context.Context
	if c.real != nil || c.cause != nil {
		inner = c.realLocked()
	}
	c.mu.Unlock()
	if inner != nil {
		if v := inner.Value(key); v != nil {
			return v
		}
	}
	return c.sess.ctx.Value(key)
}

// String names the context for debugging.
func (c *endCtx) String() string { return "session.Belief.Context" }
