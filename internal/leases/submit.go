package leases

import (
	"context"
	"errors"
	"sync"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// A release handed to the leader (Proposer.Accept, for
// Grant.ReleaseBeforeCommit) returns once raft on the leader has taken it
// in, and its commit is followed here in the background; see "Releases
// before their commit" in the package doc.

// submitRelease hands the release of request req (granted at index, with
// token) to the leader and follows its commit in the background. It reports
// false when the release may not have been taken in (no leader,
// an error on the way): the caller then commits the release itself, which
// a release's request ID makes safe to repeat.
func (p *Manager) submitRelease(ctx context.Context, k Kind, s *session.Session, name string, req, token, index uint64) bool {
	var changed <-chan struct{} // taken first: a change while it is handed over counts
	if p.o.LeaderChanged != nil {
		changed = p.o.LeaderChanged()
	}
	wait, err := p.o.Proposer.Accept(ctx, k.ReleaseCmd(name, s.ID(), req, token))
	if err != nil {
		return false
	}
	r := release{k: k, s: s, name: name, req: req, token: token, index: index, changed: changed}
	if !p.spawn(func() { p.follow(r, wait) }) {
		// Close began: the commit is not followed (the session's close
		// frees whatever the release did not).
		p.o.Log.Debug("not following a lease release: shutting down", "lease", name, "request", req)
	}
	return true
}

// release is a submitted release whose commit is followed.
type release struct {
	k                 Kind
	s                 *session.Session
	name              string
	req, token, index uint64
	changed           <-chan struct{} // closed when raft reports a change of leader (nil: never)
}

// follow waits, until the session ends, the part ends, AttemptTimeout
// passes or raft reports a change of leader, for the commit of a submitted
// release: through wait, or (wait nil) until the replica, at or past the
// grant's index, no longer shows the grant. It settles the release in the
// background if it may not have committed: a leader that took the release
// in and lost office may have lost it, and the next one hears it at once.
func (p *Manager) follow(r release, wait func(context.Context) (Result, error)) {
	ctx, cancel := context.WithTimeout(r.s.Context(), p.o.AttemptTimeout)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	if r.changed != nil {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			select {
			case <-r.changed:
				cancel()
			case <-done:
			}
		})
		defer wg.Wait()
		defer close(done)
	}
	var err error
	if wait != nil {
		_, err = wait(ctx)
	} else {
		err = p.released(ctx, r)
	}
	switch {
	case err == nil, errors.Is(err, wire.ErrNoSession):
		return // committed, or the session is gone and so is its grant
	case !p.mayHaveCommitted(err):
		p.o.Log.Warn("a lease release was refused", "lease", r.name, "request", r.req, "error", err)
		return
	case errors.Is(err, wire.ErrShutdown) || r.s.Context().Err() != nil || p.ctx.Err() != nil:
		return // the session's end (or close) frees the grant
	}
	p.settle(r.k, r.s, r.name, r.req, r.token, opRelease)
}

// released waits until the replica, at or past the index the grant was
// seen at, no longer shows it (released, or freed otherwise), or ctx ends.
func (p *Manager) released(ctx context.Context, r release) error {
	for {
		v := p.o.View()
		if _, held := r.k.granted(v, r.name, r.s.ID(), r.req); !held && v.Index() >= r.index {
			return nil
		}
		select {
		case <-v.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
