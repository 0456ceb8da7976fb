package raftnode

import (
	"context"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/pause"
)

// FollowLeadership runs duties while this node leads, until ctx ends: it
// reads raft's leadership notifications from ch (Options.NotifyCh), calls
// changed on each, and runs duties(dctx) in its own goroutine from each
// win, cancelling dctx and waiting for duties to return on each loss. It
// returns once the duties of the last term returned.
func FollowLeadership(ctx context.Context, ch <-chan bool, log *slog.Logger, changed func(), duties func(context.Context)) {
	var term *running
	defer func() { term.stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case isLeader := <-ch:
			changed()
			term.stop()
			term = nil
			if !isLeader {
				log.Info("lost raft leadership")
				continue
			}
			log.Info("won raft leadership")
			term = start(ctx, duties)
		}
	}
}

// running is one term's duties.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func start(ctx context.Context, duties func(context.Context)) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		duties(ctx)
	}()
	return r
}

// stop ends the duties and waits for them; nil is a no-op.
func (r *running) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// Barrier waits, retrying every retry, until a raft barrier succeeds (the
// new leader has applied its whole log); false once ctx ended first.
func (n *Node) Barrier(ctx context.Context, retry time.Duration) bool {
	for {
		mk := func() raft.Future { return n.raft.Barrier(n.opts.RPCTimeout) }
		if _, err := Issue(ctx, n.opts.Futures, mk); err == nil {
			return true
		} else if ctx.Err() != nil {
			return false
		} else {
			n.log.Warn("leader barrier failed; retrying", "error", err)
		}
		if !pause.For(ctx, retry) {
			return false
		}
	}
}

// TransferLeadership hands raft leadership to another voter before this
// node leaves, so the cluster need not wait an election timeout. Raft gives
// a transfer one election timeout; on a loaded machine that can pass, so it
// is tried twice and then given up with a warning: the transfer only saves
// time (the removal that follows, or the election after this node stops,
// moves leadership anyway), so its failure is not a failed shutdown.
func (n *Node) TransferLeadership(ctx context.Context) {
	var err error
	for range 2 {
		if _, err = Issue(ctx, n.opts.Futures, n.raft.LeadershipTransfer); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		n.log.Warn("leadership transfer did not complete; leaving as leader (the next election moves it)", "error", err)
	}
}
