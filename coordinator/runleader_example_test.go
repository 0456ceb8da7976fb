package coordinator_test

import (
	"context"
	"fmt"

	"github.com/holdfast-go/holdfast/coordinator"
)

// RunElection runs OnStartedLeading for as long as this node holds the
// lease, acquires it again whenever it loses it, and releases it when its
// context ends; the ElectionCheck is ready only while the node leads.
func ExampleCoordinator_RunElection() {
	c, stop := startExampleNode()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var check coordinator.ElectionCheck // serve check.Ready() as a readiness probe
	leading := make(chan uint64)
	holders := make(chan coordinator.Holder, 8)
	done := make(chan error)
	go func() {
		done <- c.RunElection(ctx, coordinator.ElectionConfig{
			Name:  "scheduler",
			Check: &check,
			OnStartedLeading: func(ctx context.Context, l *coordinator.Lease) {
				leading <- l.Token()
				<-ctx.Done() // do the leader's work until the term ends
			},
			OnStoppedLeading: func(cause error) { fmt.Println("stopped leading:", cause) },
			OnNewLeader:      func(h coordinator.Holder) { holders <- h },
		})
	}()
	token := <-leading
	fmt.Println("leading; ready:", check.Ready())
	h := <-holders
	fmt.Println("new leader:", h.Node, "token matches:", h.Token == token)
	cancel()
	fmt.Println("RunElection returned:", <-done)
	fmt.Println("ready:", check.Ready())
	// Output:
	// leading; ready: <nil>
	// new leader: node-a token matches: true
	// stopped leading: holdfast: lease released
	// RunElection returned: <nil>
	// ready: holdfast: not holding the lease
}
