package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/transport"
)

// MaxPendingForwards bounds the commands other nodes forward to this node
// (as raft leader) that may wait for their commit at once; more are refused
// with ErrBusy, which the forwarding node retries with backoff.
const MaxPendingForwards = 512

// minForwardBudget is the least budget a forwarded command must have left
// when the leader is about to propose it: with less, its sender stops
// waiting before any commit could answer it, so the leader drops it.
const minForwardBudget = time.Millisecond

// serveApply commits a command forwarded by another node, within the
// MaxPendingForwards bound and the budget the sender gave it (counted from
// the request's arrival: the nodes' clocks are not compared).
func (c *Coordinator) serveApply(ctx context.Context, body []byte) ([]byte, error) {
	arrived := time.Now()
	select {
	case c.forwards <- struct{}{}:
		defer func() { <-c.forwards }()
	default:
		c.metrics.forwardsRefused.Inc()
		c.log.Warn("refusing a forwarded command: too many pending", "limit", MaxPendingForwards)
		return nil, toRemote(fmt.Errorf("%w: %d forwarded commands pending", ErrBusy, MaxPendingForwards))
	}
	var req applyRequest
	if err := transport.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.BudgetNanos > 0 {
		left := time.Duration(req.BudgetNanos) - time.Since(arrived)
		if left < minForwardBudget || ctx.Err() != nil {
			// The sender has stopped waiting (or will have before a commit
			// could answer it): it settles the request itself, so applying
			// it now could only leave behind what nobody waits for.
			c.metrics.forwardsExpired.Inc()
			return nil, toRemote(fmt.Errorf("%w: the forwarded command's budget ran out before it was proposed", ErrBusy))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, left)
		defer cancel()
	}
	res, err := c.applyLocal(ctx, req.Data)
	if err != nil {
		return nil, toRemote(err)
	}
	return transport.Encode(res)
}

// maybeDuplicate sends req (a lease command) to addr once more, later,
// when a test asked for duplicated forwards (dupForward): a lease command
// may reach the leader twice or late, and the second copy must change
// nothing. A no-op in production.
func (c *Coordinator) maybeDuplicate(addr string, req applyRequest) {
	hook := c.dupForward.Load()
	if hook == nil {
		return
	}
	delay, ok := (*hook)()
	if !ok {
		return
	}
	c.spawn(func() {
		if !sleepCtx(c.ctx, delay) {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RPCTimeout)
		defer cancel()
		_ = c.trans.Call(ctx, addr, methodApply, req, nil)
		c.dupsSent.Add(1)
	})
}
