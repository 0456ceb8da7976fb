package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// AcquireSemaphore hands out up to limit permits of a name at once, each
// with its own fencing token; a permit released goes to the first waiter.
func ExampleCoordinator_AcquireSemaphore() {
	c, stop := startExampleNode()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p1, err := c.AcquireSemaphore(ctx, "workers", 2)
	if err != nil {
		panic(err)
	}
	p2, err := c.AcquireSemaphore(ctx, "workers", 2)
	if err != nil {
		panic(err)
	}
	fmt.Println("holders:", len(c.SemaphoreHolders("workers")), "tokens increase:", p2.Token() > p1.Token())
	_, err = c.TryAcquireSemaphore(ctx, "workers", 2)
	fmt.Println("third permit free:", !errors.Is(err, coordinator.ErrSemaphoreFull))
	if err := p1.Release(ctx); err != nil {
		panic(err)
	}
	// The replica may lag this node's own requests: Sync reads after them.
	if err := c.Sync(ctx); err != nil {
		panic(err)
	}
	fmt.Println("after release: holders:", len(c.SemaphoreHolders("workers")), "permit error:", p1.Err())
	_ = p2.Release(ctx)
	// Output:
	// holders: 2 tokens increase: true
	// third permit free: false
	// after release: holders: 1 permit error: holdfast: lease released
}
