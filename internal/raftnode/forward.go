package raftnode

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// minForwardBudget is the least budget a forwarded command must have left
// when the leader is about to propose it: with less, its sender stops
// waiting before any commit could answer it, so the leader drops it.
const minForwardBudget = time.Millisecond

// ForwardOptions configure the leader's side of forwarding.
type ForwardOptions struct {
	// Limit bounds the forwarded commands that may wait for their commit
	// at once; more are refused with wire.ErrBusy.
	Limit int
	// Metrics count the commands refused for the limit and those dropped
	// because their budget ran out (nil: not counted).
	Metrics *Metrics
	Log     *slog.Logger
	// Apply commits a command on this node (Node.CommitAsLeader).
	Apply func(ctx context.Context, data []byte) (wire.ApplyResult, error)
	// Submit hands a command to raft on this node without waiting for its
	// commit (as Node.Accept does on the leader): it answers wire.ApplyRequest.Accept. Nil:
	// such a command is committed and answered as any other.
	Submit func(ctx context.Context, data []byte) error
}

// ServeForwards returns the handler of wire.MethodApply: it commits
// commands forwarded by other nodes through opts.Apply (or, for a request
// with Accept, hands them to raft through opts.Submit and answers at
// once), at most opts.Limit at once, each within the budget its sender
// gave it (counted from the request's arrival: the nodes' clocks are not
// compared). A command
// refused for the limit, or whose budget ran out before it was proposed,
// is answered with wire.ErrBusy and never proposed.
func ServeForwards(opts ForwardOptions) wire.HandlerFunc {
	pending := make(chan struct{}, opts.Limit)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, body []byte) ([]byte, error) {
		arrived := time.Now()
		select {
		case pending <- struct{}{}:
			defer func() { <-pending }()
		default:
			opts.Metrics.forwardRefused()
			log.Warn("refusing a forwarded command: too many pending", "limit", opts.Limit)
			return nil, fmt.Errorf("%w: %d forwarded commands pending", wire.ErrBusy, opts.Limit)
		}
		return wire.Typed(func(ctx context.Context, req wire.ApplyRequest) (wire.ApplyResult, error) {
			if req.BudgetNanos > 0 {
				left := time.Duration(req.BudgetNanos) - time.Since(arrived)
				if left < minForwardBudget || ctx.Err() != nil {
					// The sender has stopped waiting (or will have before a
					// commit could answer it): it settles the request
					// itself, so applying it now could only leave behind
					// what nobody waits for.
					opts.Metrics.forwardExpired()
					return wire.ApplyResult{}, fmt.Errorf("%w: the forwarded command's budget ran out before it was proposed", wire.ErrBusy)
				}
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, left)
				defer cancel()
			}
			if req.Accept && opts.Submit != nil {
				if err := opts.Submit(ctx, req.Data); err != nil {
					return wire.ApplyResult{}, err
				}
				return wire.ApplyResult{Accepted: true}, nil
			}
			return opts.Apply(ctx, req.Data)
		})(ctx, body)
	}
}

// maybeDuplicate sends req (a lease command) to addr once more, later,
// when a test asked for duplicated forwards (SetDupForward): a lease
// command may reach the leader twice or late, and the second copy must
// change nothing. A no-op in production.
func (n *Node) maybeDuplicate(addr string, req wire.ApplyRequest) {
	hook := n.dupForward.Load()
	if hook == nil {
		return
	}
	delay, ok := (*hook)()
	if !ok {
		return
	}
	n.spawn(func() {
		if !pause.For(n.opts.Context, delay) {
			return
		}
		ctx, cancel := context.WithTimeout(n.opts.Context, n.opts.RPCTimeout)
		defer cancel()
		_ = n.opts.Trans.Call(ctx, addr, wire.MethodApply, req, nil)
		n.dupsSent.Add(1)
	})
}

// Forwards returns the handler of wire.MethodApply on this node: the
// forwarded commands it serves as leader are committed (CommitAsLeader) or,
// with Accept, taken in (as Accept does on the leader), at most limit at
// once (see ServeForwards).
func (n *Node) Forwards(limit int, m *Metrics, log *slog.Logger) wire.HandlerFunc {
	return ServeForwards(ForwardOptions{Limit: limit, Metrics: m, Log: log, Apply: n.CommitAsLeader,
		Submit: func(ctx context.Context, data []byte) error {
			_, err := n.acceptAsLeader(ctx, data)
			return err
		}})
}
