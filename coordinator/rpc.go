package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// maxPendingForwards bounds the commands other nodes forward to this node
// (as raft leader) that may wait for their commit at once; more are refused
// with wire.ErrBusy, which the forwarding node retries with backoff.
const maxPendingForwards = 512

// newDispatcher routes the inbound RPCs to the parts that answer them.
func (c *Coordinator) newDispatcher() *wire.Dispatcher {
	d := wire.NewDispatcher(c.closing)
	c.cluster.Register(d)
	c.lessor.Register(d)
	d.Handle(wire.MethodApply, raftnode.ServeForwards(raftnode.ForwardOptions{
		Limit:   maxPendingForwards,
		Metrics: c.metrics.raft,
		Log:     c.log,
		Apply:   c.node.ApplyLocal,
		Submit:  c.node.SubmitData,
	}))
	d.Handle(wire.MethodRemove, c.node.ServeRemove)
	d.Handle(wire.MethodSync, c.reads().ServeSync)
	d.Handle(wire.MethodWaitGrant, wire.Typed(c.leases.ServeWait))
	d.Handle(wire.MethodOperate, wire.Typed(c.serveOperate))
	c.registerFeed(d)
	d.Handle(wire.MethodShardPrepare, wire.Typed(c.servePrepare))
	d.Handle(wire.MethodGossipKeyring, func(_ context.Context, body []byte) ([]byte, error) { return c.gossipKeys.Serve(body) })
	return d
}
