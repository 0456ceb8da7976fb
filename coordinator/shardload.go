package coordinator

import (
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
)

// DefaultLoadHalfLife is Config.Shards.LoadHalfLife when it is zero.
const DefaultLoadHalfLife = 30 * time.Second

// shardLoads is this node's part in balancing by load: the meter that
// smooths the loads its shard leases report (sent on keepalives), and, for
// the terms it leads, the book of the loads its sessions reported.
type shardLoads struct {
	meter *shards.LoadMeter
	book  shards.LoadBook
	plan  atomic.Pointer[shards.PlanReport] // the leader's latest round; nil when not leading
	// previews carries plan requests to the balancer of this node's
	// leader term (taken only while it runs).
	previews chan shards.PreviewRequest
}

func newShardLoads(cfg ShardConfig) *shardLoads {
	hl := cfg.LoadHalfLife
	if hl == 0 {
		hl = DefaultLoadHalfLife
	}
	return &shardLoads{meter: shards.NewLoadMeter(hl), previews: make(chan shards.PreviewRequest)}
}

// ReportLoad tells the leader how loaded this shard is now: requests,
// bytes or work per second, in any unit as long as every node uses the
// same one. Report as often as is convenient (every few seconds is
// plenty): this node smooths the reports with an exponentially weighted
// moving average whose half-life is Config.Shards.LoadHalfLife, and sends
// the averages of the shards it owns with its session keepalives. Nothing
// is committed to raft; the leader keeps the last reports in memory and,
// once any shard has one, balances by load instead of by count (a shard
// without a report counts as the mean of those with one). A new leader
// starts without reports, so placement is by count until the next
// keepalives arrive. A report after the lease ended, or a negative, NaN or
// infinite load, is ignored.
func (l *ShardLease) ReportLoad(load float64) {
	if l.Context().Err() != nil {
		return
	}
	l.loads.meter.Observe(uint32(l.Shard()), load, time.Now())
}

// recordLocalLoads is the local path of a keepalive this node, the leader,
// answered for its own session id: its loads go straight into the book.
func (c *Coordinator) recordLocalLoads(id string) {
	if s, l := c.loads.meter.Report(); len(s) > 0 {
		c.loads.book.Record(id, s, l)
	}
}

// balancerLoads is BalancerOptions.Loads: each shard's load as an owner
// (the current one, or before its first report the one before) last
// reported.
func (c *Coordinator) balancerLoads(v *fsm.View, dst []float64) []float64 {
	return c.loads.book.Loads(v.ShardCount(), dst)
}

// Placement is the leader's latest planning round: how each node stood,
// where the balancer aims it and the moves the round started. Loads and
// targets are in the unit of ShardLease.ReportLoad when ByLoad, else in
// shards.
type Placement struct {
	// At is when the round ran.
	At time.Time
	// ByLoad says whether any shard had a load report (else the round
	// balanced by count).
	ByLoad bool
	// Nodes are the sessions that may own shards, in session ID order.
	Nodes []NodePlacement
	// Moves are the grants and handoffs the round started.
	Moves []PlacementMove
	// Unowned is the number of shards without an owner at the round.
	Unowned int
	// Waiting, in a plan (PlanShards), says why the balancer would not
	// plan now ("" when it would).
	Waiting string
	// Unplaceable are the shards whose placement rules (ShardRules) no
	// node with a session passes: they stay unowned until a node with the
	// tags joins or the rules change. UnplaceableWaiting are those that
	// only a node not eligible yet (joining, not heard from) passes: they
	// go there once it is.
	Unplaceable, UnplaceableWaiting []ShardID
}

// NodePlacement is one node's line of a Placement.
type NodePlacement struct {
	// Node is the node's name and Session its session ID.
	Node, Session string
	// Capacity is its Config.Shards.Weight (0 read as 1).
	Capacity float64
	// Shards is what it held at the round, Planned what it holds once
	// the round's moves are done.
	Shards, Planned int
	// Load, PlannedLoad and Target are its load before and after the
	// round's moves and the load the balancer aims it at.
	Load, PlannedLoad, Target float64
	// Eligible says whether it may receive shards (stable, heard from).
	Eligible bool
	// Stuck says that one shard alone puts it above the band: it should
	// carry that shard only.
	Stuck bool
}

// PlacementMove is one grant or handoff a round started.
type PlacementMove struct {
	Shard ShardID
	// From and To are session IDs; From is "" for a grant of a free shard.
	From, To string
	// Reason is "free" (the shard had no owner), "count" (a node was
	// outside its count bounds), "load" (outside the load band), "pin" (an
	// operator's pin or move), "rule" (its owner lacks the tags its
	// placement rules require) or "drain" (its owner is drained).
	Reason string
}

// Placement returns the latest planning round of this node's balancer,
// and false when this node does not lead (or has not planned yet in this
// term). The report lives in the leader's memory only.
func (c *Coordinator) Placement() (Placement, bool) {
	rep := c.loads.plan.Load()
	if rep == nil {
		return Placement{}, false
	}
	p := Placement{At: rep.At, ByLoad: rep.ByLoad, Unowned: rep.Unowned,
		Nodes: make([]NodePlacement, len(rep.Members)), Moves: make([]PlacementMove, len(rep.Moves))}
	for i, m := range rep.Members {
		p.Nodes[i] = NodePlacement{Node: m.Node, Session: m.ID, Capacity: m.Capacity, Shards: m.Shards, Planned: m.Planned,
			Load: m.Load, PlannedLoad: m.PlannedLoad, Target: m.Target, Eligible: m.Eligible, Stuck: m.Stuck}
	}
	for i, m := range rep.Moves {
		p.Moves[i] = PlacementMove{Shard: m.Shard, From: m.From, To: m.To, Reason: m.Reason}
	}
	for _, u := range rep.Unplaceable {
		if u.Waiting {
			p.UnplaceableWaiting = append(p.UnplaceableWaiting, u.Shard)
		} else {
			p.Unplaceable = append(p.Unplaceable, u.Shard)
		}
	}
	return p, true
}
