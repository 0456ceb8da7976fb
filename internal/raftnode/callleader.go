package raftnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// once the caller's context or the attempt's timeout ends.
func (n *Node) CallLeader(ctx context.Context, addr, method string, req, resp any) error {
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
