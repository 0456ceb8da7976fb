package coordinator

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
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
			if c.metrics != nil {
				c.metrics.leaderChanges.Inc()
			}
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
// (barrier), that the cluster is initialised, runs autopilot, and
// reconciles gossip members into the raft configuration.
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
	if !c.ensureClusterInit(ctx) {
		return
	}
	c.pilot.Start(ctx)
	defer func() { <-c.pilot.Stop() }()
	lessorDone := make(chan struct{})
	go func() {
		defer close(lessorDone)
		c.lessor.run(ctx)
	}()
	defer func() { <-lessorDone }()
	balancerDone := make(chan struct{})
	go func() {
		defer close(balancerDone)
		shards.NewBalancer(c.balancerOptions()).Run(ctx)
	}()
	defer func() { <-balancerDone }()
	t := time.NewTicker(c.cfg.ReconcileInterval)
	defer t.Stop()
	for {
		c.reconcileMembers()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
	}
}

// ensureClusterInit commits InitCluster when the replicated state has no
// cluster ID yet (the first leader of a new cluster).
func (c *Coordinator) ensureClusterInit(ctx context.Context) bool {
	for c.fsm.View().Cluster().ID == "" {
		id := newID()
		_, err := c.applyLocal(ctx, mustEncode(fsm.Command{Op: fsm.OpInitCluster, Init: &fsm.InitCluster{
			ClusterID: id,
			Shards:    uint32(c.cfg.Shards),
			Voters:    uint8(c.cfg.Voters),
			CreatedBy: c.cfg.NodeName,
		}}))
		if err == nil {
			c.log.Info("initialised new cluster", "cluster", id, "shards", c.cfg.Shards)
			break
		}
		c.log.Warn("initialising the cluster failed; retrying", "error", err)
		if !sleepCtx(ctx, c.cfg.Raft.CommitTimeout*10) {
			return false
		}
	}
	if cl := c.fsm.View().Cluster(); int(cl.Shards) != c.cfg.Shards {
		c.log.Warn("configured shard count differs from the cluster's; the cluster's wins",
			"configured", c.cfg.Shards, "cluster", cl.Shards)
	}
	return true
}

func mustEncode(cmd fsm.Command) []byte {
	b, err := fsm.Encode(cmd)
	if err != nil {
		panic(err) // only for commands built in this package
	}
	return b
}

// reconcileMembers adds every live gossip member that is not yet in the raft
// configuration, and that proves its identity (admit), as a non-voter.
// Autopilot promotes and removes.
func (c *Coordinator) reconcileMembers() {
	servers := c.raftServers()
	if servers == nil || c.raft.State() != raft.Leader {
		return
	}
	inConfig := make(map[string]bool, len(servers))
	for _, s := range servers {
		inConfig[string(s.ID)] = true
	}
	ours := c.ClusterID()
	for _, m := range c.members.Members() {
		if m.State != membership.Alive || m.Meta.NodeID == "" || inConfig[m.Meta.NodeID] {
			continue
		}
		if m.Meta.ClusterID != "" && m.Meta.ClusterID != ours {
			continue
		}
		if !c.admit(c.ctx, m) {
			continue
		}
		addr := transport.RaftAddress(m.Meta.RPCAddr, m.Meta.NodeID)
		c.log.Info("adding member as non-voter", "member", m.Name, "id", m.Meta.NodeID, "addr", m.Meta.RPCAddr)
		add := func() raft.IndexFuture {
			return c.raft.AddNonvoter(raft.ServerID(m.Meta.NodeID), addr, 0, c.cfg.RPCTimeout)
		}
		if _, err := issue(c.ctx, &c.futs, add); err != nil {
			c.log.Warn("adding non-voter failed", "member", m.Name, "error", err)
			return
		}
	}
}
