package coordinator

import (
	"context"
	"fmt"

	"github.com/holdfast-go/holdfast/transport"
)

// MaxPendingForwards bounds the commands other nodes forward to this node
// (as raft leader) that may wait for their commit at once; more are refused
// with ErrBusy, which the forwarding node retries with backoff.
const MaxPendingForwards = 512

// serveApply commits a command forwarded by another node, within the
// MaxPendingForwards bound.
func (c *Coordinator) serveApply(ctx context.Context, body []byte) ([]byte, error) {
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
	res, err := c.applyLocal(ctx, req.Data)
	if err != nil {
		return nil, toRemote(err)
	}
	return transport.Encode(res)
}
