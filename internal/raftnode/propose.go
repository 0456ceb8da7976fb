package raftnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// CommitAsLeader commits data (an encoded command) through raft on this
// node, which must lead (otherwise a *wire.NotLeaderError, and nothing was
// proposed); it is what the leader's duties propose with, and what serving
// a forwarded command does (Forwards). A command the state machine refused
// returns an error wrapping wire.ErrRejected (and wire.ErrNoSession or
// wire.ErrLeaseHeld where they apply, and the state machine's error) along
// with the result, which still describes the lease for a refused acquire.
func (n *Node) CommitAsLeader(ctx context.Context, data []byte) (wire.ApplyResult, error) {
	p, err := n.submitLocal(ctx, data)
	if err != nil {
		return wire.ApplyResult{}, err
	}
	return p.wait(ctx)
}

// acceptAsLeader hands data to raft on this node, which must lead
// (otherwise a *wire.NotLeaderError, and nothing was proposed), and returns
// as soon as raft has taken the command in, without waiting for its
// commit: raft's leader loop takes proposals one at a time, in order, so
// every command this node proposes or forwards afterwards comes after it in
// the log, or (if this node stops leading first) the command fails, which
// the returned pendingApply reports. A read index this node serves waits
// for the commands it took in (WaitSubmitted), so a Sync it serves, for any
// node, that starts after acceptAsLeader returned sees the command if it
// committed. It is Accept on the leader, and the leader's side of a
// forwarded wire.ApplyRequest.Accept.
func (n *Node) acceptAsLeader(ctx context.Context, data []byte) (*pendingApply, error) {
	// Under the lock, the last command stored is the last one raft took
	// in: two concurrent submits cannot store in the other order.
	n.submitMu.Lock()
	defer n.submitMu.Unlock()
	a, err := n.submitLocal(ctx, data)
	if err == nil {
		n.lastSubmit.Store(a)
	}
	return a, err
}

// Accept proposes cmd and returns once raft on the leader has taken it in,
// ahead of every command this node proposes or forwards afterwards,
// without waiting for its commit (Commit waits for the commit). On the
// leader wait follows the commit. On another node the command is forwarded once with
// wire.ApplyRequest.Accept: wait is then nil, as nothing here follows the
// commit (a leader that answers only after the commit yields a wait that
// returns its answer). After an error the command may or may not have been
// taken in.
func (n *Node) Accept(ctx context.Context, cmd fsm.Command) (wait func(context.Context) (wire.ApplyResult, error), err error) {
	addr, self := n.LeaderRPCAddr()
	switch {
	case self:
		data, err := fsm.Encode(cmd)
		if err != nil {
			return nil, err
		}
		a, err := n.acceptAsLeader(ctx, data)
		if err != nil {
			return nil, err
		}
		return a.wait, nil
	case addr == "":
		return nil, wire.ErrNoLeader
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return nil, err
	}
	req := wire.ApplyRequest{Data: data, Accept: true}
	if dl, ok := ctx.Deadline(); ok {
		req.BudgetNanos = max(int64(time.Until(dl)), 1)
	}
	var res wire.ApplyResult
	err = wire.FromRemote(n.CallLeader(ctx, addr, wire.MethodApply, req, &res))
	n.maybeDuplicate(addr, req)
	switch {
	case err != nil:
		return nil, err
	case res.Accepted:
		return nil, nil
	}
	return func(context.Context) (wire.ApplyResult, error) { return res, nil }, nil
}

// WaitSubmitted waits until every command Accept (or a forwarded
// accept) took in on this leader before the call
// has been answered (committed or failed), or ctx ends (its error). Raft
// commits in log order, so waiting for the last one is enough.
func (n *Node) WaitSubmitted(ctx context.Context) error {
	if a := n.lastSubmit.Load(); a != nil {
		if _, err := a.p.Wait(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// pendingApply is a command handed to raft on the leader (acceptAsLeader),
// whose commit has not been waited for.
type pendingApply struct{ p *Pending[raft.ApplyFuture] }

// submitLocal hands data to raft on this node, which must lead.
func (n *Node) submitLocal(ctx context.Context, data []byte) (*pendingApply, error) {
	if n.raft.State() != raft.Leader {
		addr, _ := n.LeaderRPCAddr()
		return nil, &wire.NotLeaderError{Leader: addr}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // nobody waits for the answer: do not propose
	}
	timeout := n.opts.RPCTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	p, err := StartFuture(n.opts.Futures, func() raft.ApplyFuture { return n.raft.Apply(data, timeout) })
	if err != nil {
		return nil, err
	}
	return &pendingApply{p}, nil
}

// wait waits for the commit (or ctx's end) and returns the state
// machine's answer, as CommitAsLeader does. It is safe for concurrent use.
func (a *pendingApply) wait(ctx context.Context) (wire.ApplyResult, error) {
	f, err := a.p.Wait(ctx)
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return wire.ApplyResult{}, &wire.NotLeaderError{}
		}
		return wire.ApplyResult{}, err
	}
	r, _ := f.Response().(fsm.Result)
	res := wire.ApplyResult{Index: f.Index(), Token: r.Token, Holder: r.Holder, Request: r.Request, Queued: r.Queued, Noop: r.Noop, Stale: r.Stale, Count: r.Count}
	switch {
	case r.Err == nil:
		return res, nil
	case errors.Is(r.Err, fsm.ErrNoSession):
		return res, wire.Wrap(wire.ErrRejected, wire.ErrNoSession, r.Err)
	case errors.Is(r.Err, fsm.ErrLeaseHeld):
		return res, wire.Wrap(wire.ErrRejected, wire.ErrLeaseHeld, r.Err)
	}
	return res, wire.Wrap(wire.ErrRejected, r.Err)
}

// LeaderLost reports whether err is Commit's report that no leader took the
// command in, or that the leader was lost or changed while it waited: the
// command may or may not have committed, so asking again is safe only for
// a command whose second application changes nothing.
func LeaderLost(err error) bool {
	return errors.Is(err, ErrLeaderChanged) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, wire.ErrNoLeader) || errors.Is(err, wire.ErrNotLeader)
}

// Commit commits cmd and returns once it has committed (Accept returns
// once the leader has taken it in): on this node if it leads, otherwise forwarded to the
// leader with what is left of ctx's deadline as its budget. It retries
// while no leader is known, until ctx ends (an error wrapping
// wire.ErrNoLeader and ctx's error); a command whose fate is unknown
// (leader lost mid-commit, or this node learned of a new leader while the
// forward waited, or the leader answered that it shuts down:
// ErrLeaderChanged) is reported, not retried. It returns wire.ErrShutdown
// only once this node's host context has ended.
func (n *Node) Commit(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error) {
	data, err := fsm.Encode(cmd)
	if err != nil {
		return wire.ApplyResult{}, err
	}
	backoff := 20 * time.Millisecond
	for {
		if n.closing() {
			return wire.ApplyResult{}, wire.ErrShutdown
		}
		addr, self := n.LeaderRPCAddr()
		switch {
		case self:
			res, err := n.CommitAsLeader(ctx, data)
			if !errors.Is(err, wire.ErrNotLeader) {
				return res, err
			}
		case addr != "":
			if err := ctx.Err(); err != nil {
				return wire.ApplyResult{}, err
			}
			var res wire.ApplyResult
			req := wire.ApplyRequest{Data: data}
			if dl, ok := ctx.Deadline(); ok {
				req.BudgetNanos = max(int64(time.Until(dl)), 1)
			}
			err := wire.FromRemote(n.CallLeader(ctx, addr, wire.MethodApply, req, &res))
			if cmd.Op == fsm.OpAcquire || cmd.Op == fsm.OpRelease || cmd.Op == fsm.OpLeaseHandover {
				n.maybeDuplicate(addr, req)
			}
			if !errors.Is(err, wire.ErrNotLeader) {
				return res, err
			}
		}
		if !pause.For(ctx, backoff) {
			return wire.ApplyResult{}, fmt.Errorf("%w: %w", wire.ErrNoLeader, ctx.Err())
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// RemoveSelf asks the leader to remove this node from the raft
// configuration, retrying while there is no leader or it moves, until ctx
// ends or 2 × RPCTimeout passes.
func (n *Node) RemoveSelf(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*n.opts.RPCTimeout)
	defer cancel()
	for {
		addr, self := n.LeaderRPCAddr()
		var err error
		switch {
		case self:
			err = n.RemoveServer(ctx, n.opts.ID)
		case addr != "":
			err = wire.FromRemote(n.opts.Trans.Call(ctx, addr, wire.MethodRemove, wire.RemoveRequest{ID: n.opts.ID}, nil))
		default:
			err = wire.ErrNoLeader
		}
		if err == nil || !(errors.Is(err, wire.ErrNotLeader) || errors.Is(err, wire.ErrNoLeader)) {
			return err
		}
		if !pause.For(ctx, 50*time.Millisecond) {
			return fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}

// RemoveServer removes id from the raft configuration; this node must be
// leader (otherwise a *wire.NotLeaderError).
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if n.raft.State() != raft.Leader {
		addr, _ := n.LeaderRPCAddr()
		return &wire.NotLeaderError{Leader: addr}
	}
	n.log.Info("removing server from the raft configuration", "id", id)
	_, err := Issue(ctx, n.opts.Futures, func() raft.IndexFuture {
		return n.raft.RemoveServer(raft.ServerID(id), 0, n.opts.RPCTimeout)
	})
	return err
}

// ServeRemove is the leader's handler of wire.MethodRemove.
func (n *Node) ServeRemove(ctx context.Context, body []byte) ([]byte, error) {
	var req wire.RemoveRequest
	if err := transport.Decode(body, &req); err != nil {
		return nil, err
	}
	return nil, n.RemoveServer(ctx, req.ID)
}
