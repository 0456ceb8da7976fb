package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// FormationLogInterval is how often a node that is not yet a member of a
// formed cluster logs its progress (see Formation) when nothing changes; a
// change is logged at once.
const FormationLogInterval = 5 * time.Second

// Formation describes how far this node is in forming or joining a
// cluster, as Coordinator.Formation reports it: whether it is formed, the
// bootstrap expectation, the candidates seen and a one-line progress.
type Formation = cluster.Formation

// Formation reports how far this node is in forming or joining a
// cluster. It reads gossip and the local replica only.
func (c *Coordinator) Formation() Formation { return c.cluster.Formation() }

// WaitReady blocks until Ready returns nil, and returns nil then; or until
// ctx ends or the node shuts down, and returns Ready's last error.
func (c *Coordinator) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-c.ctx.Done():
			return wire.Wrap(ErrNotReady, ErrShutdown)
		case <-tick.C:
		}
	}
}
