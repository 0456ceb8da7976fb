package raftnode

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// ErrLeaderChanged: this node learned that another node leads (or none
// does) while a request forwarded to the old leader waited for its answer.
// The request may still have taken effect there; the caller repeats it
// (every forwarded command is safe to repeat) at the new leader.
var ErrLeaderChanged = errors.New("holdfast: the leader changed while a forwarded request waited (outcome unknown)")

// CallLeader calls method on the leader at addr, as Trans.Call does, but
// gives up with an error wrapping ErrLeaderChanged as soon as raft reports
// that addr no longer leads: a leader that lost office (cut off, deposed)
// may never answer, and the new one should hear the request at once, not
// once the caller's context or the attempt's timeout ends. A leader that
// answers that it is shutting down (wire.CodeShutdown) has lost office
// too: while this node runs, that answer is reported as ErrLeaderChanged,
// never as wire.ErrShutdown, which the callers of Commit and Accept take
// to mean that this node shuts down (and stop retrying or settling).
func (n *Node) CallLeader(ctx context.Context, addr, method string, req, resp any) error {
	return n.leaderGone(n.callLeader(ctx, addr, method, req, resp), method, addr)
}

// leaderGone maps a leader's shutdown answer (see CallLeader) to an error
// wrapping ErrLeaderChanged, unless this node is closing too.
func (n *Node) leaderGone(err error, method, addr string) error {
	var re *transport.RemoteError
	if errors.As(err, &re) && re.Code == wire.CodeShutdown && !n.closing() {
		return fmt.Errorf("%w: %s on %s: the leader is shutting down", ErrLeaderChanged, method, addr)
	}
	return err
}

func (n *Node) callLeader(ctx context.Context, addr, method string, req, resp any) error {
	if n.opts.LeaderChanged == nil {
		return n.opts.Trans.Call(ctx, addr, method, req, resp)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			changed := n.opts.LeaderChanged() // before the check: no change is missed
			if cur, _ := n.LeaderRPCAddr(); cur != addr {
				cancel(ErrLeaderChanged)
				return
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	})
	err := n.opts.Trans.Call(cctx, addr, method, req, resp)
	close(done)
	wg.Wait()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrLeaderChanged) {
		return fmt.Errorf("%w: %s on %s", ErrLeaderChanged, method, addr)
	}
	return err
}
