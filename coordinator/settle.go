package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// A lease request whose caller stopped waiting may still have been
// committed: the context ended after the command reached raft, or the
// leader's answer was lost or late. Such a request is settled: the node
// commits a release that names the request, which releases the grant that
// answered it, takes it out of the queue, or (if the acquire has not
// arrived yet) marks it given up so that it changes nothing when it does.
// Settling runs in the background on a goroutine the coordinator joins at
// shutdown, retried until it commits, for as long as the session lives:
// when the session ends, everything it held or waited for goes with it.

// settleMaxBackoff bounds the pause between settlement attempts, so a
// settlement commits within about one round trip of the node reaching the
// leader again.
const settleMaxBackoff = 250 * time.Millisecond

// giveUpCmd is the release of request req of session s for name (token:
// only that grant, or 0 for whatever grant the request holds).
func giveUpCmd(s *session.Session, name string, req, token uint64) fsm.Command {
	return fsm.Command{Op: fsm.OpRelease, Lease: &fsm.LeaseCmd{Name: name, Session: s.ID(), Request: req, Token: token}}
}

// mayHaveCommitted reports whether a lease command that failed with err
// may still have been (or still be) applied.
func mayHaveCommitted(err error) bool {
	return err != nil && !errors.Is(err, ErrRejected) && !errors.Is(err, ErrNoSession) && !errors.Is(err, ErrLeaseHeld)
}

// settle gives request req of session s for name up in the background
// (op labels the metric: "acquire" or "resign").
func (c *Coordinator) settle(s *session.Session, name string, req, token uint64, op string) {
	if c.metrics != nil {
		c.metrics.settlements.WithLabelValues(op).Inc()
	}
	c.settleCmd(s, giveUpCmd(s, name, req, token), name, req)
}

// settleCmd commits the give-up cmd of request req for name in the
// background (see settleLoop).
func (c *Coordinator) settleCmd(s *session.Session, cmd fsm.Command, name string, req uint64) {
	if !c.spawn(func() { c.settleLoop(s, cmd, name, req) }) {
		c.log.Debug("not settling a lease request: shutting down (the session's end releases it)", "lease", name, "request", req)
	}
}

// settleLoop commits cmd, retrying with backoff while its outcome is
// unknown, until it commits, the session ends, or the node shuts down.
func (c *Coordinator) settleLoop(s *session.Session, cmd fsm.Command, name string, req uint64) {
	backoff := 20 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.Context(), c.cfg.RPCTimeout)
		_, err := c.apply(ctx, cmd)
		cancel()
		if !mayHaveCommitted(err) || errors.Is(err, ErrShutdown) || s.Context().Err() != nil {
			if err != nil && !errors.Is(err, ErrNoSession) && s.Context().Err() == nil {
				c.log.Warn("settling a lease request failed; the session's end releases it", "lease", name, "request", req, "error", err)
			}
			return
		}
		c.log.Debug("settling a lease request: outcome unknown; retrying", "lease", name, "request", req, "error", err)
		if !sleepCtx(s.Context(), jitter(backoff)) {
			return
		}
		backoff = min(2*backoff, settleMaxBackoff)
	}
}

// giveUp releases request req under ctx (retrying while its outcome is
// unknown); if that is not confirmed before ctx ends, it goes on in the
// background. It returns the error of the attempt under ctx.
func (c *Coordinator) giveUp(ctx context.Context, s *session.Session, name string, req, token uint64, op string) error {
	_, err := c.applyRetry(ctx, giveUpCmd(s, name, req, token))
	if mayHaveCommitted(err) && !errors.Is(err, ErrShutdown) && s.Context().Err() == nil {
		c.settle(s, name, req, token, op)
	}
	if errors.Is(err, ErrNoSession) {
		return nil // the session is gone: so is everything it held
	}
	return err
}
