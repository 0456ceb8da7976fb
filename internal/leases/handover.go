package leases

import (
	"context"
	"errors"
	"fmt"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// handOver releases g, whose belief has ended, to the local waiter w: the
// release and w's acquire are one command (fsm.OpLeaseHandover), so the
// name changes hands in one commit instead of two in turn. It returns as
// Release does, once the release (with the acquire) has committed; w gets
// the acquire's answer and goes on from it as if it had asked itself. When
// the handover cannot be made (the node has a newer session, the command
// is refused) g is released on its own and w asks itself; when its outcome
// is unknown as ctx ends, the release is settled in the background and w
// asks again under the request the handover made for it.
func (g *Grant) handOver(ctx context.Context, w *slotWaiter) error {
	p := g.p
	s, req, err := p.o.NextRequest(ctx)
	if err != nil || s != g.sess {
		err := g.giveUpAlone(ctx)
		p.pass(g.slot, w, g.name, handed{})
		return err
	}
	cmd := fsm.Command{Op: fsm.OpLeaseHandover, Lease: &fsm.LeaseCmd{Name: g.name, Session: s.ID(), Request: req,
		Wait: true, Value: w.r.Value, Prev: g.req, PrevToken: g.token}}
	res, err := p.retry(ctx, cmd)
	h := handed{made: true, s: s, req: req, res: res, err: err}
	switch {
	case err == nil, errors.Is(err, wire.ErrNoSession), errors.Is(err, wire.ErrShutdown):
		// Committed, or nothing left to release: w reads the same answer.
	case !p.mayHaveCommitted(err):
		// Refused whole: nothing of it applied. Release alone; w asks.
		err = g.giveUpAlone(ctx)
		p.pass(g.slot, w, g.name, handed{})
		return err
	default:
		// Unknown as ctx ended: the release half is settled, and w asks
		// again under the same request, so that a handover that did (or
		// will) commit is what w's acquire answers: w's request never
		// holds a grant w does not know of.
		if s.Context().Err() == nil {
			p.settleThen(Lease, s, g.name, g.req, g.token, opRelease, p.hookSettle(ctx, g.name, g.req))
		}
		h = handed{reuse: true, s: s, req: req}
	}
	p.pass(g.slot, w, g.name, h)
	switch {
	case err == nil, errors.Is(err, wire.ErrNoSession):
		return nil // released (or the session is gone, and all it held)
	case errors.Is(err, wire.ErrShutdown):
		return err
	}
	return fmt.Errorf("holdfast: release %q: the release goes on in the background: %w", g.name, err)
}

// giveUpAlone releases g on its own, as Release does without a waiter.
func (g *Grant) giveUpAlone(ctx context.Context) error {
	err := g.p.giveUp(ctx, g.kind, g.sess, g.name, g.req, g.token, opRelease)
	if err == nil || errors.Is(err, wire.ErrShutdown) {
		return err
	}
	return fmt.Errorf("holdfast: release %q: the release goes on in the background: %w", g.name, err)
}
