package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// ShardPreparer is a ShardHandler that warms a shard up before a planned
// move gives it to this node. The shard manager checks for it with a type
// assertion, so a handler without Prepare works as before (its moves are
// not prepared, the grant comes unannounced).
//
// Before a planned move (rebalancing, Drain, Shutdown) the leader calls
// Prepare on the chosen next owner while the old owner keeps serving; it
// revokes the old owner once every shard of the request is ready or
// Config.Shards.PrepareTimeout has passed, and grants the shard to this
// node as soon as the old owner's release commits. A move whose old owner
// is gone (crash, expiry) is not prepared.
type ShardPreparer interface {
	ShardHandler
	// Prepare is called in a goroutine of its own on the next owner of
	// shard s, now owned by from (whose Token is the grant that is
	// handed off), and returns when the shard is ready to be served: load
	// its state, warm caches. It holds nothing: this node gets no token
	// until the grant, after from's release. An error is logged; the move
	// goes on.
	//
	// ctx ends when the move ends. Once this node's lease on s has
	// started, and Acquire was called, the cause (context.Cause) is
	// context.Canceled: keep what Prepare loaded for Acquire. When the move
	// will not come (the leader abandoned it, another node got the shard,
	// this node's session ended, or nothing came for a while after the
	// leader stopped waiting), the cause is ErrMoveAbandoned: drop what
	// Prepare loaded. At Shutdown or Close it is ErrShutdown.
	Prepare(ctx context.Context, s ShardID, from Holder) error
}

// ErrMoveAbandoned is the cause (context.Cause) of a ShardPreparer's
// Prepare context when the planned move will not come.
var ErrMoveAbandoned = errors.New("holdfast: shard move abandoned")

// NextOwner returns, while the leader is handing the shard off (Revoked is
// closed), the node it means to hand it to, from the local replica: a
// drain may forward the requests it receives meanwhile to Addr. Token is
// zero (the next grant is not made yet). ok is false before the revoke,
// when the leader named no next owner (a drained node's shard nobody can
// take), or once the shard moved on. The grant that follows the release
// decides: the shard may still end up elsewhere.
func (l *ShardLease) NextOwner() (h Holder, ok bool) {
	v := l.belief.env.view()
	sh, found := v.Shard(uint32(l.Shard()))
	if !found || sh.State != fsm.ShardRevoking || sh.Token != l.Token() || sh.To == "" {
		return h, false
	}
	o, found := v.Session(sh.To)
	if !found {
		return h, false
	}
	setHolder(&h, &o, 0)
	return h, true
}

// shardPreparer returns the handler's Prepare, or nil when it has none.
func shardPreparer(h ShardHandler) func(ctx context.Context, s ShardID, from Holder) error {
	switch p := h.(type) {
	case HandlerFuncs:
		return p.PrepareFunc
	case *HandlerFuncs:
		return p.PrepareFunc
	case ShardPreparer:
		return p.Prepare
	}
	return nil
}

// managerPrepare adapts the handler's Prepare for the shard manager.
func (c *Coordinator) managerPrepare() func(ctx context.Context, s ShardID, from string, token uint64) error {
	p := shardPreparer(c.cfg.Shards.Handler)
	if p == nil {
		return nil
	}
	return func(ctx context.Context, s ShardID, from string, token uint64) error {
		h := Holder{Session: from, Token: token}
		if o, ok := c.fsm.View().Session(from); ok {
			setHolder(&h, &o, token)
		}
		return p(ctx, s, h)
	}
}

// prepareTimeout is the leader's bound on a prepare (0: moves are not
// prepared).
func (c *Coordinator) prepareTimeout() time.Duration {
	switch t := c.cfg.Shards.PrepareTimeout; {
	case t < 0:
		return 0
	case t == 0:
		return c.cfg.Shards.DrainTimeout
	default:
		return t
	}
}

// prepareRPC carries prepare requests between this node's balancer and
// the shard managers of the moves' targets.
func (c *Coordinator) prepareRPC() *shards.PrepareRPC[*ShardLease] {
	return &shards.PrepareRPC[*ShardLease]{View: c.fsm.View, Self: c.id, Local: c.shards, RPCAddrOf: c.cluster.RPCAddrOf,
		Call: c.trans.Call, RPCTimeout: c.cfg.RPCTimeout, Log: c.log}
}

// prepareOptions fills the balancer's prepare options.
func (c *Coordinator) prepareOptions(o *shards.BalancerOptions) {
	if t := c.prepareTimeout(); t > 0 {
		p := c.prepareRPC()
		o.Prepare, o.Abandon, o.PrepareTimeout = p.Ask, p.Abandon, t
	}
}
