package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
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
	v := l.view()
	sh, found := v.Shard(uint32(l.l.Shard()))
	if !found || sh.State != fsm.ShardRevoking || sh.Token != l.l.Token() || sh.To == "" {
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

// askPrepare is the balancer's Prepare: it asks the node of session to,
// over wire.MethodShardPrepare (or this node's manager directly).
func (c *Coordinator) askPrepare(ctx context.Context, to string, items []fsm.ShardItem, wait time.Duration) error {
	req := wire.ShardPrepareRequest{To: to, Items: items, WaitNanos: int64(wait)}
	_, err := c.callPrepare(ctx, req, wait+c.cfg.RPCTimeout)
	var re *transport.RemoteError
	if errors.As(err, &re) && re.Code == wire.CodeBadMethod {
		return nil // a node of an older release: move unprepared, as it expects
	}
	return err
}

// tellAbandon is the balancer's Abandon.
func (c *Coordinator) tellAbandon(ctx context.Context, to string, items []fsm.ShardItem) {
	req := wire.ShardPrepareRequest{To: to, Items: items, Abandon: true}
	if _, err := c.callPrepare(ctx, req, c.cfg.RPCTimeout); err != nil && ctx.Err() == nil {
		c.log.Debug("telling a shard move's target that the move is abandoned failed", "to", to, "error", err)
	}
}

// callPrepare sends req to the node of session req.To, bounded by limit.
func (c *Coordinator) callPrepare(ctx context.Context, req wire.ShardPrepareRequest, limit time.Duration) (wire.ShardPrepareReply, error) {
	var rep wire.ShardPrepareReply
	sess, ok := c.fsm.View().Session(req.To)
	if !ok {
		return rep, errors.New("holdfast: the move's target session is gone")
	}
	if sess.NodeID == c.id {
		return c.servePrepare(ctx, req)
	}
	addr, ok := c.cluster.RPCAddrOf(sess.NodeID)
	if !ok {
		return rep, errors.New("holdfast: the move's target node is not alive in gossip")
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return rep, wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodShardPrepare, req, &rep))
}

// servePrepare answers wire.MethodShardPrepare from the shard manager.
func (c *Coordinator) servePrepare(ctx context.Context, req wire.ShardPrepareRequest) (wire.ShardPrepareReply, error) {
	if req.Abandon {
		c.shards.Abandon(req.To, req.Items)
		return wire.ShardPrepareReply{}, nil
	}
	n, err := c.shards.Prepare(ctx, req.To, req.Items, time.Duration(req.WaitNanos))
	return wire.ShardPrepareReply{Ready: n}, err
}

// prepareOptions fills the balancer's prepare options.
func (c *Coordinator) prepareOptions(o *shards.BalancerOptions) {
	if t := c.prepareTimeout(); t > 0 {
		o.Prepare, o.Abandon, o.PrepareTimeout = c.askPrepare, c.tellAbandon, t
	}
}
