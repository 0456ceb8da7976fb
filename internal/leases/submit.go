package leases

import (
	"context"
	"errors"

	"github.com/holdfast-go/holdfast/internal/session"
)

// A release proposed on the leader (Options.Submit) returns once raft has
// taken it in, and its commit is followed here in the background; see
// "Releases on the leader" in the package doc.

// submitRelease hands the release of request req (and token) to raft on
// this node when it leads, and follows its commit in the background. It
// reports false when nothing was proposed (no Submit, this node does not
// lead, the node is closing): the caller then commits the release itself.
func (p *Part) submitRelease(ctx context.Context, k Kind, s *session.Session, name string, req, token uint64) bool {
	if p.o.Submit == nil {
		return false
	}
	wait, err := p.o.Submit(ctx, k.ReleaseCmd(name, s.ID(), req, token))
	if err != nil {
		return false
	}
	if !p.spawn(func() { p.follow(k, s, name, req, token, wait) }) {
		// Close began: the commit is not followed (the session's close
		// frees whatever the release did not).
		p.o.Log.Debug("not following a lease release: shutting down", "lease", name, "request", req)
	}
	return true
}

// follow waits for the commit of a submitted release (until the session
// ends, the part ends, or AttemptTimeout passes) and settles the release
// in the background if it may not have committed.
func (p *Part) follow(k Kind, s *session.Session, name string, req, token uint64, wait func(context.Context) (Result, error)) {
	ctx, cancel := context.WithTimeout(s.Context(), p.o.AttemptTimeout)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	_, err := wait(ctx)
	switch {
	case err == nil, errors.Is(err, p.o.Errors.NoSession):
		return // committed, or the session is gone and so is its grant
	case !p.mayHaveCommitted(err):
		p.o.Log.Warn("a lease release was refused", "lease", name, "request", req, "error", err)
		return
	case errors.Is(err, p.o.Errors.Shutdown) || s.Context().Err() != nil || p.ctx.Err() != nil:
		return // the session's end (or close) frees the grant
	}
	p.settle(k, s, name, req, token, opRelease)
}
