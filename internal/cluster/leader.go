package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// InitCluster commits InitCluster when the replicated state has no cluster
// ID yet (the first leader of a new cluster), retrying until it commits; it
// reports false when ctx ended first. Call it on each leadership gain,
// after the leader's barrier.
func (cl *Cluster) InitCluster(ctx context.Context) bool {
	for cl.o.View().Cluster().ID == "" {
		id := cl.ClusterID() // agreed at bootstrap and recorded in the data dir
		if id == "" {
			id = cl.o.NewID()
		}
		init := &fsm.InitCluster{
			ClusterID: id,
			Shards:    uint32(cl.o.Shards),
			Voters:    uint8(cl.o.Voters),
			CreatedBy: cl.o.NodeName,
			// The token base: read here, on the proposer, and carried in
			// the command, so every replica applies the same value.
			Created:    min(max(cl.o.Now().UnixMicro(), 0), fsm.MaxTokenBase),
			TokenFloor: cl.o.TokenFloor,
		}
		cmd, err := fsm.Encode(fsm.Command{Op: fsm.OpInitCluster, Init: init})
		if err == nil {
			err = cl.o.ApplyLocal(ctx, cmd)
		}
		if err == nil {
			c := cl.o.View().Cluster()
			cl.log.Info("initialised new cluster", "cluster", c.ID, "shards", cl.o.Shards,
				"token_base", c.TokenBase(), "token_floor", c.TokenFloor)
			break
		}
		cl.log.Warn("initialising the cluster failed; retrying", "error", err)
		if !pause.For(ctx, cl.o.CommitTimeout*10) {
			return false
		}
	}
	if c := cl.o.View().Cluster(); int(c.Shards) != cl.o.Shards {
		cl.log.Warn("configured shard count differs from the cluster's; the cluster's wins",
			"configured", cl.o.Shards, "cluster", c.Shards)
	}
	return true
}

// Lead runs this leader's share of formation until ctx ends (leadership
// lost) or Close: autopilot, and the reconciler that adds live gossip
// members to the raft configuration as non-voters, every
// ReconcileInterval and at once on a membership event. It runs in the
// caller's goroutine and returns once autopilot has stopped.
func (cl *Cluster) Lead(ctx context.Context) {
	cl.pilotMu.Lock()
	if cl.closed {
		cl.pilotMu.Unlock()
		return
	}
	cl.pilot.Start(ctx)
	cl.pilotMu.Unlock()
	defer func() { <-cl.pilot.Stop() }()
	t := time.NewTicker(cl.o.ReconcileInterval)
	defer t.Stop()
	for {
		cl.reconcileMembers()
		select {
		case <-ctx.Done():
			return
		case <-cl.ctx.Done():
			return
		case <-t.C:
		case <-cl.kick:
		}
	}
}

// reconcileMembers adds every live gossip member that is not yet in the raft
// configuration, and that proves its identity (admit), as a non-voter; and
// when a member of the configuration now advertises another RPC address (a
// voter restarted elsewhere keeps its place), it writes the new address
// into the configuration, with the member's suffrage, once the member has
// proved its identity there. Autopilot promotes and removes.
func (cl *Cluster) reconcileMembers() {
	servers := cl.servers()
	if servers == nil || cl.o.Raft.State() != raft.Leader {
		return
	}
	inConfig := make(map[string]raft.Server, len(servers))
	for _, s := range servers {
		inConfig[string(s.ID)] = s
	}
	ours := cl.ClusterID()
	for _, m := range cl.members.Members() {
		if m.State != membership.Alive || m.Meta.NodeID == "" || m.Meta.Fed {
			continue // a member fed outside raft says so itself, whatever this node's setting
		}
		if cl.leaving.excluded(m.Meta.NodeID) {
			continue // leaving, or left for good: alive in gossip only while it shuts down
		}
		addr := transport.RaftAddress(m.Meta.RPCAddr, m.Meta.NodeID)
		cur, in := inConfig[m.Meta.NodeID]
		if (in && cur.Address == addr) || (m.Meta.ClusterID != "" && m.Meta.ClusterID != ours) {
			continue
		}
		if !cl.admit(cl.ctx, m) {
			continue
		}
		if !cl.addOrMove(m, addr, cur, in) {
			return
		}
	}
}

// addOrMove adds member m at raft address addr as a non-voter (not in the
// configuration), or moves server cur to addr keeping its suffrage; it
// reports false when the change failed (the round stops there).
func (cl *Cluster) addOrMove(m membership.Member, addr raft.ServerAddress, cur raft.Server, in bool) bool {
	id := raft.ServerID(m.Meta.NodeID)
	var change func() raft.Future
	switch {
	case !in:
		cl.log.Info("adding member as non-voter", "member", m.Name, "id", m.Meta.NodeID, "addr", m.Meta.RPCAddr)
		change = func() raft.Future { return cl.o.Raft.AddNonvoter(id, addr, 0, cl.o.RPCTimeout) }
	case cur.Suffrage == raft.Voter:
		cl.log.Info("member moved: new address in the raft configuration", "member", m.Name, "id", m.Meta.NodeID,
			"from", string(cur.Address), "to", m.Meta.RPCAddr, "suffrage", "voter")
		change = func() raft.Future { return cl.o.Raft.AddVoter(id, addr, 0, cl.o.RPCTimeout) }
	default:
		cl.log.Info("member moved: new address in the raft configuration", "member", m.Name, "id", m.Meta.NodeID,
			"from", string(cur.Address), "to", m.Meta.RPCAddr, "suffrage", "non-voter")
		change = func() raft.Future { return cl.o.Raft.AddNonvoter(id, addr, 0, cl.o.RPCTimeout) }
	}
	if err := cl.o.Issue(cl.ctx, change); err != nil {
		cl.log.Warn("changing the raft configuration for a member failed", "member", m.Name, "error", err)
		return false
	}
	return true
}
