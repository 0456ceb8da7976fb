package coordinator

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// leaderLoop follows raft's leadership notifications and runs the leader's
// duties while this node leads.
func (c *Coordinator) leaderLoop() {
	var duties *runningDuties
	defer func() { duties.stop() }()
	for {
		select {
		case <-c.ctx.Done():
			return
		case isLeader := <-c.leaderCh:
			c.metrics.raft.LeadershipChanged()
			duties.stop()
			duties = nil
			if !isLeader {
				c.log.Info("lost raft leadership")
				continue
			}
			c.log.Info("won raft leadership")
			duties = c.startDuties()
		}
	}
}

// runningDuties is one term's leader duties.
type runningDuties struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *Coordinator) startDuties() *runningDuties {
	ctx, cancel := context.WithCancel(c.ctx)
	d := &runningDuties{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		c.leaderDuties(ctx)
	}()
	return d
}

// stop ends the duties and waits for them; nil is a no-op.
func (d *runningDuties) stop() {
	if d == nil {
		return
	}
	d.cancel()
	<-d.done
}

// leaderDuties runs while this node leads: it makes sure the log is applied
// (barrier), that the cluster is initialised, runs the lessor and the
// balancer, and the cluster part's autopilot and member reconciler.
func (c *Coordinator) leaderDuties(ctx context.Context) {
	for {
		barrier := func() raft.Future { return c.raft.Barrier(c.cfg.RPCTimeout) }
		if _, err := issue(ctx, &c.futs, barrier); err == nil {
			break
		} else if ctx.Err() != nil {
			return
		} else {
			c.log.Warn("leader barrier failed; retrying", "error", err)
		}
		if !sleepCtx(ctx, c.cfg.Raft.CommitTimeout) {
			return
		}
	}
	if !c.cluster.InitCluster(ctx) {
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
