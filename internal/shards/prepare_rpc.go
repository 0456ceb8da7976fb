package shards

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// PrepareRPC carries the balancer's prepare and abandon requests to the
// node of a session: over wire.MethodShardPrepare, or straight to this
// node's own Manager when the session is this node's. Serve answers the
// method on the receiving side.
type PrepareRPC[W any] struct {
	// View is the local replica (who the session's node is).
	View func() *fsm.View
	// Self is this node's identity; Local its Manager.
	Self  string
	Local *Manager[W]
	// RPCAddrOf returns the RPC address of a live node, by identity.
	RPCAddrOf func(nodeID string) (string, bool)
	// Call sends one RPC and decodes its reply.
	Call func(ctx context.Context, addr, method string, req, rep any) error
	// RPCTimeout bounds an abandon, and a prepare beyond its wait.
	RPCTimeout time.Duration
	Log        *slog.Logger
}

// Ask is the balancer's Prepare: it asks the node of session to to
// prepare items, waiting at most wait. A node of an older release, which
// does not know the method, counts as prepared: its moves go on
// unprepared, as it expects.
func (p *PrepareRPC[W]) Ask(ctx context.Context, to string, items []fsm.ShardItem, wait time.Duration) error {
	req := wire.ShardPrepareRequest{To: to, Items: items, WaitNanos: int64(wait)}
	_, err := p.call(ctx, req, wait+p.RPCTimeout)
	var re *transport.RemoteError
	if errors.As(err, &re) && re.Code == wire.CodeBadMethod {
		return nil
	}
	return err
}

// Abandon is the balancer's Abandon: it tells the node of session to that
// the move of items will not come. A failure is logged.
func (p *PrepareRPC[W]) Abandon(ctx context.Context, to string, items []fsm.ShardItem) {
	req := wire.ShardPrepareRequest{To: to, Items: items, Abandon: true}
	if _, err := p.call(ctx, req, p.RPCTimeout); err != nil && ctx.Err() == nil {
		p.Log.Debug("telling a shard move's target that the move is abandoned failed", "to", to, "error", err)
	}
}

// call sends req to the node of session req.To, bounded by limit.
func (p *PrepareRPC[W]) call(ctx context.Context, req wire.ShardPrepareRequest, limit time.Duration) (wire.ShardPrepareReply, error) {
	var rep wire.ShardPrepareReply
	sess, ok := p.View().Session(req.To)
	if !ok {
		return rep, errors.New("holdfast: the move's target session is gone")
	}
	if sess.NodeID == p.Self {
		return p.Serve(ctx, req)
	}
	addr, ok := p.RPCAddrOf(sess.NodeID)
	if !ok {
		return rep, errors.New("holdfast: the move's target node is not alive in gossip")
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return rep, wire.FromRemote(p.Call(ctx, addr, wire.MethodShardPrepare, req, &rep))
}

// Serve answers wire.MethodShardPrepare from the local Manager.
func (p *PrepareRPC[W]) Serve(ctx context.Context, req wire.ShardPrepareRequest) (wire.ShardPrepareReply, error) {
	if req.Abandon {
		p.Local.Abandon(req.To, req.Items)
		return wire.ShardPrepareReply{}, nil
	}
	n, err := p.Local.Prepare(ctx, req.To, req.Items, time.Duration(req.WaitNanos))
	return wire.ShardPrepareReply{Ready: n}, err
}
