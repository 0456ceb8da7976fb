package coordinator_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// startExampleNode starts a one-node cluster on loopback with a temporary
// data dir; stop shuts it down and removes the dir.
func startExampleNode() (c *coordinator.Coordinator, stop func()) {
	dir, err := os.MkdirTemp("", "holdfast-example")
	if err != nil {
		panic(err)
	}
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "node-a"
	cfg.DataDir = dir
	cfg.Cluster.Voters, cfg.Cluster.BootstrapExpect = 1, 1
	cfg.Shards.Count = 16
	c, err = coordinator.New(cfg)
	if err != nil {
		panic(err)
	}
	return c, func() {
		_ = c.Shutdown(context.Background())
		os.RemoveAll(dir)
	}
}

// Acquire blocks until this node holds the lease; its token goes with
// every write to the protected resource, and Release hands the lease on.
func ExampleCoordinator_Acquire() {
	c, stop := startExampleNode()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	l, err := c.Acquire(ctx, "scheduler")
	if err != nil {
		panic(err)
	}
	h, _ := c.Holder("scheduler") // local replica, no network
	fmt.Println("holder:", h.Node, "token matches:", h.Token == l.Token())
	fmt.Println("checkpoint:", l.Checkpoint())
	if err := l.Release(ctx); err != nil {
		panic(err)
	}
	// The replica may lag this node's own requests: Sync reads after them.
	if err := c.Sync(ctx); err != nil {
		panic(err)
	}
	_, held := c.Holder("scheduler")
	fmt.Println("after release: held:", held, "lease error:", l.Err())
	// Output:
	// holder: node-a token matches: true
	// checkpoint: <nil>
	// after release: held: false lease error: holdfast: lease released
}

// ShardFor maps a key to its shard; Owner says which node owns it, from
// the local replica; Watch streams the table as it changes.
func ExampleCoordinator_Owner() {
	c, stop := startExampleNode()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s := c.ShardFor([]byte("user:42"))
	fmt.Println("user:42 is in shard", s, "of", c.Shards())
	for tab := range c.WatchTable(ctx) { // wait until the shard has an owner
		if o, ok := tab.Owner(s); ok {
			fmt.Println("owner:", o.Node, "token > 0:", o.Token > 0)
			break
		}
	}
	o, _ := c.Owner(s)
	fmt.Println("Owner agrees:", o.Node)
	// Output:
	// user:42 is in shard 13 of 16
	// owner: node-a token > 0: true
	// Owner agrees: node-a
}
