package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// leaderLoop runs the leader's duties while this node leads (see
// raftnode.FollowLeadership).
func (c *Coordinator) leaderLoop() {
	raftnode.FollowLeadership(c.ctx, c.leaderCh, c.log, c.metrics.raft.LeadershipChanged, c.leaderDuties)
}

// leaderDuties runs while this node leads: it makes sure the log is applied
// (barrier), that the cluster is initialised, runs the lessor and the
// balancer, and the cluster part's autopilot and member reconciler.
func (c *Coordinator) leaderDuties(ctx context.Context) {
	if !c.node.Barrier(ctx, c.cfg.Raft.CommitTimeout) || !c.cluster.InitCluster(ctx) {
		return
	}
	lessorDone := make(chan struct{})
	go func() {
		defer close(lessorDone)
		c.lessor.Run(ctx)
	}()
	defer func() { <-lessorDone }()
	balancerDone := make(chan struct{})
	go func() {
		defer close(balancerDone)
		defer c.loads.plan.Store(nil) // the report is the leader's only
		shards.NewBalancer(c.balancerOptions()).Run(ctx)
	}()
	defer func() { <-balancerDone }()
	c.cluster.Lead(ctx) // autopilot and the member reconciler, until ctx ends
}

func mustEncode(cmd fsm.Command) []byte {
	b, err := fsm.Encode(cmd)
	if err != nil {
		panic(err) // only for commands built in this package
	}
	return b
}
