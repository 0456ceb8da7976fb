package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// maxPendingForwards bounds the commands other nodes forward to this node
// (as raft leader) that may wait for their commit at once; more are refused
// with errBusy, which the forwarding node retries with backoff.
const maxPendingForwards = 512

// RPC method names (see internal/wire).
const (
	methodStats            = wire.MethodStats
	methodBootstrapPrepare = wire.MethodBootstrapPrepare
	methodBootstrapCommit  = wire.MethodBootstrapCommit
	methodBootstrapAbort   = wire.MethodBootstrapAbort
	methodKeepAlive        = wire.MethodKeepAlive
	methodConfirm          = wire.MethodConfirm
	methodGossipKeyring    = wire.MethodGossipKeyring
)

// newDispatcher routes the inbound RPCs to the parts that answer them.
func (c *Coordinator) newDispatcher() *wire.Dispatcher {
	d := wire.NewDispatcher(c.closing)
	d.Handle(wire.MethodStats, func(_ context.Context, body []byte) ([]byte, error) { return c.cluster.ServeStats(body) })
	d.Handle(wire.MethodApply, raftnode.ServeForwards(raftnode.ForwardOptions{
		Limit:   maxPendingForwards,
		Metrics: raftnode.ForwardMetrics{Refused: c.metrics.forwardsRefused, Expired: c.metrics.forwardsExpired},
		Log:     c.log,
		Apply:   c.node.ApplyLocal,
	}))
	d.Handle(wire.MethodRemove, c.node.ServeRemove)
	d.Handle(wire.MethodSync, func(ctx context.Context, _ []byte) ([]byte, error) { return c.serveSync(ctx) })
	d.Handle(wire.MethodConfirm, wire.Typed(func(_ context.Context, req confirmRequest) (confirmReply, error) {
		return c.serveConfirm(req), nil
	}))
	d.Handle(wire.MethodKeepAlive, wire.Typed(func(ctx context.Context, req keepAliveRequest) (keepAliveReply, error) {
		index, err := c.lessor.KeepAlive(ctx, req.Session)
		return keepAliveReply{Index: index}, err
	}))
	d.Handle(wire.MethodWaitGrant, wire.Typed(c.leases.ServeWait))
	d.Handle(wire.MethodGossipKeyring, func(_ context.Context, body []byte) ([]byte, error) { return c.serveKeyring(body) })
	for _, m := range []string{wire.MethodBootstrapPrepare, wire.MethodBootstrapCommit, wire.MethodBootstrapAbort} {
		d.Handle(m, func(_ context.Context, body []byte) ([]byte, error) { return c.cluster.ServeBootstrap(m, body) })
	}
	return d
}
