package leases

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// A queued request on a follower asks the leader for its grant as well as
// watching its own replica (see "Granted on the leader's answer" in the
// package doc): the leader applies the release that grants it as soon as it
// commits, while the follower's replica hears of that commit one raft
// message later. Whichever shows the grant first answers the acquire.

const (
	// leaderWaitFor is the longest one ask waits on the leader; the
	// follower then asks again.
	leaderWaitFor = 3 * time.Second
	// maxServedWaits bounds the asks a node answers at once; more are
	// refused with wire.ErrBusy (the asker then watches its replica only).
	maxServedWaits = 1024
)

// ServeWait answers wire.MethodWaitGrant from the local replica: once a view
// at or past r.After shows the grant of the request, with its token and
// that view's index; or not granted once r.WaitNanos (at most
// leaderWaitFor) has passed, ctx ends, or the part ends. The view's index is
// at or past the grant's, and the view still shows the grant, so the asker
// may start its belief from it as from the leader's answer to an acquire.
func (p *Manager) ServeWait(ctx context.Context, r wire.WaitGrantRequest) (wire.WaitGrantReply, error) {
	select {
	case p.served <- struct{}{}:
		defer func() { <-p.served }()
	default:
		return wire.WaitGrantReply{}, wire.ErrBusy
	}
	k := Lease
	if r.Semaphore {
		k = Semaphore
	}
	wait := min(time.Duration(r.WaitNanos), leaderWaitFor)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		v := p.o.View()
		if v.Index() >= r.After {
			if token, ok := k.granted(v, r.Name, r.Session, r.Request); ok {
				return wire.WaitGrantReply{Granted: true, Token: token, Index: v.Index()}, nil
			}
		}
		select {
		case <-v.Changed():
		case <-ctx.Done():
			return wire.WaitGrantReply{}, nil
		case <-p.ctx.Done():
			return wire.WaitGrantReply{}, nil
		}
	}
}

// askLeader asks the leader (Options.AskLeader) for the grant of request req
// of session s, queued at index after, until it is granted (sent on got),
// an ask fails, or ctx ends.
func (p *Manager) askLeader(ctx context.Context, r Request, s *session.Session, req, after uint64, got chan<- wire.WaitGrantReply) {
	ask := wire.WaitGrantRequest{Semaphore: r.Kind == Semaphore, Name: r.Name, Session: s.ID(), Request: req,
		After: after, WaitNanos: int64(leaderWaitFor)}
	for ctx.Err() == nil {
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, leaderWaitFor+p.o.AttemptTimeout)
		rep, err := p.o.AskLeader(actx, ask)
		cancel()
		switch {
		case err != nil:
			return // no leader to ask, an older leader, or busy: the replica answers
		case rep.Granted:
			got <- rep
			return
		case time.Since(start) < leaderWaitFor/2:
			return // answered early without a grant (the node is closing)
		}
	}
}
