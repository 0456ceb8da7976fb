package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/transport"
)

// RPC method names. They are part of the wire protocol.
const (
	methodApply         = "raft.apply"
	methodRemove        = "raft.remove"
	methodKeepAlive     = "session.keepalive"
	methodConfirm       = "raft.confirm"
	methodGossipKeyring = "gossip.keyring"
	// raft.stats and bootstrap.*: see internal/cluster.
)

// Remote error codes.
const (
	codeNotLeader = "not_leader"
	codeRejected  = "rejected"
	codeShutdown  = "shutdown"
	codeBadMethod = "bad_method"
	codeNoSession = "no_session"
	codeLeaseHeld = "lease_held"
	codeBusy      = "busy"
)

type applyRequest struct {
	Data []byte `msgpack:"data"`
	// BudgetNanos is how long the sender still waited for the answer when
	// it sent the request (a duration, not a deadline: clocks differ); 0
	// means unbounded. The leader drops the command unapplied once that
	// much time has passed since the request reached it.
	BudgetNanos int64 `msgpack:"budget,omitempty"`
}

// applyResult is what a committed command returned.
type applyResult struct {
	Index   uint64 `msgpack:"index"`
	Token   uint64 `msgpack:"token"`
	Holder  string `msgpack:"holder"`
	Request uint64 `msgpack:"req"`
	Queued  bool   `msgpack:"queued"`
	Noop    bool   `msgpack:"noop"`
	Stale   bool   `msgpack:"stale,omitempty"`
	Count   int    `msgpack:"count"`
}

type removeRequest struct {
	ID string `msgpack:"id"`
}

// serveRPC dispatches one inbound RPC.
func (c *Coordinator) serveRPC(ctx context.Context, method string, body []byte) ([]byte, error) {
	if c.ctx.Err() != nil {
		return nil, &transport.RemoteError{Code: codeShutdown, Message: ErrShutdown.Error()}
	}
	switch method {
	case cluster.MethodStats:
		return c.cluster.ServeStats(body)
	case methodApply:
		return c.serveApply(ctx, body)
	case methodSync:
		return c.serveSync(ctx)
	case methodConfirm:
		var req confirmRequest
		if err := transport.Decode(body, &req); err != nil {
			return nil, err
		}
		return transport.Encode(c.serveConfirm(req))
	case methodKeepAlive:
		var req keepAliveRequest
		if err := transport.Decode(body, &req); err != nil {
			return nil, err
		}
		index, err := c.lessor.KeepAlive(ctx, req.Session)
		if err != nil {
			return nil, toRemote(err)
		}
		return transport.Encode(keepAliveReply{Index: index})
	case methodRemove:
		var req removeRequest
		if err := transport.Decode(body, &req); err != nil {
			return nil, err
		}
		return nil, toRemote(c.removeServerLocal(ctx, req.ID))
	case methodGossipKeyring:
		return c.serveKeyring(body)
	case cluster.MethodBootstrapPrepare, cluster.MethodBootstrapCommit, cluster.MethodBootstrapAbort:
		return c.cluster.ServeBootstrap(method, body)
	default:
		return nil, &transport.RemoteError{Code: codeBadMethod, Message: "unknown method " + strconv.Quote(method)}
	}
}

// toRemote maps our errors to wire errors.
func toRemote(err error) error {
	if err == nil {
		return nil
	}
	var nl *NotLeaderError
	switch {
	case errors.As(err, &nl):
		return &transport.RemoteError{Code: codeNotLeader, Message: nl.Leader}
	case errors.Is(err, ErrNoSession):
		return &transport.RemoteError{Code: codeNoSession, Message: err.Error()}
	case errors.Is(err, ErrLeaseHeld):
		return &transport.RemoteError{Code: codeLeaseHeld, Message: err.Error()}
	case errors.Is(err, ErrRejected):
		return &transport.RemoteError{Code: codeRejected, Message: err.Error()}
	case errors.Is(err, ErrShutdown):
		return &transport.RemoteError{Code: codeShutdown, Message: err.Error()}
	case errors.Is(err, ErrBusy):
		return &transport.RemoteError{Code: codeBusy, Message: err.Error()}
	}
	return err
}

// fromRemote maps wire errors back to ours.
func fromRemote(err error) error {
	var re *transport.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	switch re.Code {
	case codeNotLeader:
		return &NotLeaderError{Leader: re.Message}
	case codeRejected:
		return fmt.Errorf("%w: %s", ErrRejected, re.Message)
	case codeNoSession:
		return fmt.Errorf("%w (%s)", ErrNoSession, re.Message)
	case codeLeaseHeld:
		return fmt.Errorf("%w (%s)", ErrLeaseHeld, re.Message)
	case codeShutdown:
		return fmt.Errorf("%w (remote)", ErrShutdown)
	case codeBusy:
		return fmt.Errorf("%w (%s)", ErrBusy, re.Message)
	}
	return err
}

// leaderRPCAddr returns the current leader's RPC address, or "" if unknown.
func (c *Coordinator) leaderRPCAddr() (addr string, self bool) {
	a, id := c.raft.LeaderWithID()
	if a == "" {
		return "", false
	}
	if string(id) == c.id {
		return c.trans.Addr(), true
	}
	host, _, err := transport.SplitRaftAddress(a)
	if err != nil {
		return "", false
	}
	return host, false
}

// applyLocal commits data through raft on this node, which must be leader.
// A command the state machine refused returns an error wrapping
// ErrRejected (and ErrNoSession or ErrLeaseHeld where they apply) along
// with the result, which still describes the lease for a refused acquire.
func (c *Coordinator) applyLocal(ctx context.Context, data []byte) (applyResult, error) {
	if c.raft.State() != raft.Leader {
		addr, _ := c.leaderRPCAddr()
		return applyResult{}, &NotLeaderError{Leader: addr}
	}
	if err := ctx.Err(); err != nil {
		return applyResult{}, err // nobody waits for the answer: do not propose
	}
	timeout := c.cfg.RPCTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	f, err := issue(ctx, &c.futs, func() raft.ApplyFuture { return c.raft.Apply(data, timeout) })
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return applyResult{}, &NotLeaderError{}
		}
		return applyResult{}, err
	}
	r, _ := f.Response().(fsm.Result)
	res := applyResult{Index: f.Index(), Token: r.Token, Holder: r.Holder, Request: r.Request, Queued: r.Queued, Noop: r.Noop, Stale: r.Stale, Count: r.Count}
	switch {
	case r.Err == nil:
		return res, nil
	case errors.Is(r.Err, fsm.ErrNoSession):
		return res, wrap(ErrRejected, ErrNoSession, r.Err)
	case errors.Is(r.Err, fsm.ErrLeaseHeld):
		return res, wrap(ErrRejected, ErrLeaseHeld, r.Err)
	}
	return res, wrap(ErrRejected, r.Err)
}

// apply commits cmd, on this node if it leads, otherwise forwarded to the
// leader. It retries while no leader is known, until ctx ends; a command
// whose fate is unknown (leader lost mid-commit) is reported, not retried.
func (c *Coordinator) apply(ctx context.Context, cmd fsm.Command) (applyResult, error) {
	data, err := fsm.Encode(cmd)
	if err != nil {
		return applyResult{}, err
	}
	backoff := 20 * time.Millisecond
	for {
		if c.ctx.Err() != nil {
			return applyResult{}, ErrShutdown
		}
		addr, self := c.leaderRPCAddr()
		switch {
		case self:
			res, err := c.applyLocal(ctx, data)
			if !errors.Is(err, ErrNotLeader) {
				return res, err
			}
		case addr != "":
			if err := ctx.Err(); err != nil {
				return applyResult{}, err
			}
			var res applyResult
			req := applyRequest{Data: data}
			if dl, ok := ctx.Deadline(); ok {
				req.BudgetNanos = max(int64(time.Until(dl)), 1)
			}
			err := fromRemote(c.trans.Call(ctx, addr, methodApply, req, &res))
			if cmd.Op == fsm.OpAcquire || cmd.Op == fsm.OpRelease {
				c.maybeDuplicate(addr, req)
			}
			if !errors.Is(err, ErrNotLeader) {
				return res, err
			}
		}
		if !sleepCtx(ctx, backoff) {
			return applyResult{}, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// removeSelf asks the leader to remove this node from the raft
// configuration.
func (c *Coordinator) removeSelf(ctx context.Context) error {
	for {
		addr, self := c.leaderRPCAddr()
		var err error
		switch {
		case self:
			err = c.removeServerLocal(ctx, c.id)
		case addr != "":
			err = fromRemote(c.trans.Call(ctx, addr, methodRemove, removeRequest{ID: c.id}, nil))
		default:
			err = ErrNoLeader
		}
		if err == nil || !(errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader)) {
			return err
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}

// removeServerLocal removes id from the raft configuration; this node must
// be leader.
func (c *Coordinator) removeServerLocal(ctx context.Context, id string) error {
	if c.raft.State() != raft.Leader {
		addr, _ := c.leaderRPCAddr()
		return &NotLeaderError{Leader: addr}
	}
	c.log.Info("removing server from the raft configuration", "id", id)
	_, err := issue(ctx, &c.futs, func() raft.IndexFuture {
		return c.raft.RemoveServer(raft.ServerID(id), 0, c.cfg.RPCTimeout)
	})
	return err
}
