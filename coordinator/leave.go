package coordinator

import (
	"cmp"
	"context"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/lifecycle"
)

// LeaveOptions tune Leave.
type LeaveOptions struct {
	// Force takes a voter out even when fewer than Cluster.Voters voters
	// would remain and no node is ready to replace it (the cluster then
	// runs with fewer voters until an eligible node joins and autopilot
	// promotes it). Force never takes out the last voter, nor a voter whose
	// removal the remaining healthy voters could not commit.
	Force bool
}

// Leave decommissions this node: it takes the node out of the raft
// configuration for good, and then stops it as Shutdown does (shards handed
// off, leases and session ended, leadership handed over, gossip left). It
// is what a node that will not come back, or comes back only with an empty
// data dir, should do; a restart needs only Shutdown, which keeps a voter's
// place.
//
// A voter whose removal would leave fewer than Cluster.Voters voters is
// replaced first: the leader promotes a healthy, stable, eligible
// non-voter, and only then removes this node, so the fault tolerance never
// drops. With no such node the leave is refused (an error wrapping
// ErrLeaveRefused that says why) unless opts.Force; the last voter, or a
// voter whose removal the remaining healthy voters could not commit, is
// refused even then. Leave checks with the leader before it changes
// anything: a refused Leave leaves the node running, untouched. If the
// check passes but the removal fails later (leadership lost for good, ctx
// ended), the node still stops, keeping its place, and the error says so;
// run Leave again on a restarted node, or let the dead-voter rules replace
// it.
//
// Leave needs a raft leader and waits for one until ctx ends. It returns
// ErrShutdown when Shutdown, Close or another Leave began first.
func (c *Coordinator) Leave(ctx context.Context, opts LeaveOptions) error {
	if c.closing() {
		return ErrShutdown
	}
	if _, err := c.cluster.Leave(ctx, opts.Force, true); err != nil { // the check: nothing changes yet
		return err
	}
	if !c.stopGracefully(ctx, &opts) {
		return ErrShutdown
	}
	return c.stopErr
}

// leave performs the graceful steps of Shutdown (decommission nil) and of
// Leave. Shutdown changes the raft configuration only for a non-voter,
// which takes itself out; Leave takes this node out after the shards,
// leases and leadership are handed over. When gossip shows no quorum of
// voters alive (the last nodes of a cluster stopped one by one), Shutdown
// skips the handoffs and the session close, which could not commit; and
// every step that must commit is skipped once no raft leader has been
// known for Config.ShutdownWithoutLeader (see lifecycle.Steps). Each skipped or
// failed step is logged on a line of its own.
func (c *Coordinator) leave(ctx context.Context, decommission *LeaveOptions) error {
	var plan cluster.ShutdownSteps
	if c.cluster != nil {
		plan = c.cluster.ShutdownPlan()
	}
	if c.feedReplica() {
		// Outside raft: no configuration to count; a leader heard of
		// through the feed stands for the quorum that keeps it.
		_, plan.Quorum = c.RaftLeader()
	}
	steps := lifecycle.StepsOptions{Log: c.log, Leaderless: cmp.Or(max(c.cfg.ShutdownWithoutLeader, 0), DefaultShutdownWithoutLeader),
		NoLeaderSince: c.NoLeaderSince, NoLeaderChanged: c.noLeader.Changed}
	o := lifecycle.StopOptions{StepsOptions: steps, Commit: plan.Quorum || decommission != nil, HandOff: c.shards.HandOff,
		CloseSession: c.closeSession}
	if plan.Transfer {
		o.TransferLeadership = c.node.TransferLeadership
	}
	switch {
	case decommission != nil:
		o.Decommission = func(ctx context.Context) error {
			rep, err := c.cluster.Leave(ctx, decommission.Force, false)
			if err == nil {
				c.log.Info("left the raft configuration for good", "replaced_by", c.cluster.NameOf(rep.Promoted), "replacement_id", rep.Promoted)
			}
			return err
		}
	case plan.RemoveSelf:
		o.RemoveSelf = c.node.RemoveSelf
	}
	if c.members != nil {
		o.LeaveGossip = c.members.Leave
	}
	return lifecycle.Stop(ctx, o)
}

// DefaultShutdownWithoutLeader is Config.ShutdownWithoutLeader when it is
// zero.
const DefaultShutdownWithoutLeader = 5 * time.Second
