package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// FormationLogInterval is how often a node that is not yet a member of a
// formed cluster logs its progress (see Formation) when nothing changes; a
// change is logged at once.
const FormationLogInterval = 5 * time.Second

// Formation describes how far this node is in forming or joining a
// cluster, as Coordinator.Formation reports it.
type Formation struct {
	// Formed is true once this node is a member of a formed cluster (it
	// knows the cluster's ID).
	Formed bool
	// Expect is Config.Cluster.BootstrapExpect: how many voter-eligible nodes must
	// see each other before a new cluster is bootstrapped (0: this node
	// only joins an existing cluster).
	Expect int
	// Seen lists, sorted, the names of the voter-eligible members that
	// gossip shows alive and in no cluster yet, this node included when it
	// is eligible: the candidates for a bootstrap.
	Seen []string
	// Progress says in one line where formation stands, for instance
	// "bootstrap: 2 of 3 eligible nodes seen (n1, n2)".
	Progress string
}

// Formation reports how far this node is in forming or joining a
// cluster. It reads gossip and the local replica only.
func (c *Coordinator) Formation() Formation { return Formation(c.cluster.Formation()) }

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
