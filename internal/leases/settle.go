package leases

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// Settlement (see the package doc) runs in the background on a goroutine
// Close joins, retried until it commits, for as long as the session lives.

// settleMaxBackoff bounds the pause between settlement attempts, so a
// settlement commits within about one round trip of the node reaching the
// leader again.
const settleMaxBackoff = 250 * time.Millisecond

// mayHaveCommitted reports whether a command that failed with err may
// still have been (or still be) applied.
func (p *Manager) mayHaveCommitted(err error) bool {
	return err != nil && !errors.Is(err, wire.ErrRejected) && !errors.Is(err, wire.ErrNoSession) && !errors.Is(err, wire.ErrLeaseHeld)
}

// settle gives request req of session s for name up in the background
// (token: only that grant, or 0 for whatever the request holds); o labels
// the metric.
func (p *Manager) settle(k Kind, s *session.Session, name string, req, token uint64, o op) {
	p.settleThen(k, s, name, req, token, o, nil)
}

// settleThen is settle, calling done (if not nil) once the settlement
// ends, with whether it committed.
func (p *Manager) settleThen(k Kind, s *session.Session, name string, req, token uint64, o op, done func(committed bool)) {
	p.o.Metrics.settled(k.label(o))
	cmd := k.ReleaseCmd(name, s.ID(), req, token)
	if !p.spawn(func() {
		committed := p.settleLoop(s, cmd, name, req)
		if done != nil {
			done(committed)
		}
	}) {
		p.o.Log.Debug("not settling a lease request: shutting down (the session's end releases it)", "lease", name, "request", req)
		if done != nil {
			done(false)
		}
	}
}

// settleAcquire settles request req of a failed acquire of r under ctx (the
// acquire's own), telling the settle hook, if one is set.
func (p *Manager) settleAcquire(ctx context.Context, r Request, s *session.Session, req uint64) {
	p.settleThen(r.Kind, s, r.Name, req, 0, opAcquire, p.hookSettle(ctx, r.Name, req))
}

// hookSettle tells the settle hook, if one is set, of a failed acquire of
// name under ctx: req is the request settled, or 0 when the acquire asked
// the cluster nothing. It returns the func to call once the settlement
// ends (nil: none); for req 0 it has called it already.
func (p *Manager) hookSettle(ctx context.Context, name string, req uint64) func(bool) {
	h := p.settleHook.Load()
	if h == nil {
		return nil
	}
	done := (*h)(ctx, name, req)
	if req == 0 && done != nil {
		done(true)
		return nil
	}
	return done
}

// askedNothing tells the settle hook, if one is set, that a failed acquire
// of name under ctx asked the cluster nothing (it stopped waiting for its
// local turn).
func (p *Manager) askedNothing(ctx context.Context, name string) { p.hookSettle(ctx, name, 0) }

// SettleHook is told of a failed acquire that may have been committed, or
// that asked the cluster nothing, and of a Release that goes on in the
// background: ctx is the call's context, name the lease or semaphore, req
// the request settled (0: nothing was asked). It runs before the call
// returns, or, for a turn a local handover made for an acquire, when that
// turn is disposed of. The func it returns (nil: none) is called once the
// settlement ends, with whether it committed: after a commit the request
// can no longer be granted, and any grant it had is released. For req 0 it
// is called at once, with true.
type SettleHook func(ctx context.Context, name string, req uint64) (done func(committed bool))

// SetSettleHook installs h (nil: none), for tests that record when a
// failed acquire stopped being able to take effect.
func (p *Manager) SetSettleHook(h SettleHook) {
	if h == nil {
		p.settleHook.Store(nil)
		return
	}
	p.settleHook.Store(&h)
}

// settleLoop commits the give-up cmd, retrying with backoff while its
// outcome is unknown, until it commits, the session ends, or the part ends
// (EndAll or Close). It reports whether the command committed.
func (p *Manager) settleLoop(s *session.Session, cmd fsm.Command, name string, req uint64) bool {
	p.settling.Add(1)
	defer p.settling.Add(-1)
	sctx, stop := context.WithCancel(s.Context())
	defer stop()
	defer context.AfterFunc(p.ctx, stop)()
	backoff := 20 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(sctx, p.o.AttemptTimeout)
		_, err := p.o.Proposer.Commit(ctx, cmd)
		cancel()
		if !p.mayHaveCommitted(err) || errors.Is(err, wire.ErrShutdown) || sctx.Err() != nil {
			if err != nil && !errors.Is(err, wire.ErrNoSession) && sctx.Err() == nil {
				p.o.Log.Warn("settling a lease request failed; the session's end releases it", "lease", name, "request", req, "error", err)
			}
			return err == nil
		}
		p.o.Log.Debug("settling a lease request: outcome unknown; retrying", "lease", name, "request", req, "error", err)
		if !pause.For(sctx, pause.Jitter(backoff)) {
			return false
		}
		backoff = min(2*backoff, settleMaxBackoff)
	}
}

// giveUp releases request req under ctx (retrying while its outcome is
// unknown); if that is not confirmed before ctx ends, it goes on in the
// background. It returns the error of the attempt under ctx.
func (p *Manager) giveUp(ctx context.Context, k Kind, s *session.Session, name string, req, token uint64, o op) error {
	_, err := p.retry(ctx, k.ReleaseCmd(name, s.ID(), req, token))
	if p.mayHaveCommitted(err) && !errors.Is(err, wire.ErrShutdown) && s.Context().Err() == nil {
		var done func(bool)
		if o == opRelease {
			done = p.hookSettle(ctx, name, req) // a caller's Release
		}
		p.settleThen(k, s, name, req, token, o, done)
	}
	if errors.Is(err, wire.ErrNoSession) {
		return nil // the session is gone: so is everything it held
	}
	return err
}
