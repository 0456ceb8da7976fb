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
	p.o.Metrics.settled(k.label(o))
	cmd := k.ReleaseCmd(name, s.ID(), req, token)
	if !p.spawn(func() { p.settleLoop(s, cmd, name, req) }) {
		p.o.Log.Debug("not settling a lease request: shutting down (the session's end releases it)", "lease", name, "request", req)
	}
}

// settleLoop commits the give-up cmd, retrying with backoff while its
// outcome is unknown, until it commits, the session ends, or the part ends
// (EndAll or Close).
func (p *Manager) settleLoop(s *session.Session, cmd fsm.Command, name string, req uint64) {
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
			return
		}
		p.o.Log.Debug("settling a lease request: outcome unknown; retrying", "lease", name, "request", req, "error", err)
		if !pause.For(sctx, pause.Jitter(backoff)) {
			return
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
		p.settle(k, s, name, req, token, o)
	}
	if errors.Is(err, wire.ErrNoSession) {
		return nil // the session is gone: so is everything it held
	}
	return err
}
