package admin

import (
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// PlacementRow is coordinator.Placement in /v1/status: the raft leader's
// latest planning round, shown by the leader only.
type PlacementRow struct {
	// At is when the round ran.
	At time.Time `json:"at"`
	// ByLoad is true when shards report load (ShardLease.ReportLoad);
	// false: the round balanced by count, and loads and targets are in
	// shards.
	ByLoad bool `json:"by_load"`
	// Nodes are the sessions that may own shards, sorted by session ID.
	Nodes []NodeBalanceRow `json:"nodes"`
	// Moves are the grants and handoffs the round started.
	Moves []PlacementMoveRow `json:"moves"`
	// Unowned is the number of shards without an owner at the round.
	Unowned int `json:"unowned"`
	// Unplaceable are the shards whose placement rules no node passes
	// (they stay unowned until a node with the tags joins or the rule
	// changes); UnplaceableWaiting those only a node not eligible yet
	// passes.
	Unplaceable        []coordinator.ShardID `json:"unplaceable"`
	UnplaceableWaiting []coordinator.ShardID `json:"unplaceable_waiting"`
}

// NodeBalanceRow is one node's line of a PlacementRow.
type NodeBalanceRow struct {
	Node    string `json:"node"`
	Session string `json:"session"`
	// Capacity is the node's Config.Shards.Weight (0 read as 1).
	Capacity float64 `json:"capacity"`
	// Shards it held at the round, and PlannedShards once the round's
	// moves are done.
	Shards        int `json:"shards"`
	PlannedShards int `json:"planned_shards"`
	// Load and PlannedLoad are its load before and after the round's
	// moves, Target the load the balancer aims it at.
	Load        float64 `json:"load"`
	PlannedLoad float64 `json:"planned_load"`
	Target      float64 `json:"target"`
	// Eligible: it may receive shards (its session is stable and heard
	// from). Stuck: one shard alone puts it above the band.
	Eligible bool `json:"eligible"`
	Stuck    bool `json:"stuck"`
}

// PlacementMoveRow is one grant or handoff of a round.
type PlacementMoveRow struct {
	Shard coordinator.ShardID `json:"shard"`
	// From and To are session IDs; From is "" for a grant.
	From string `json:"from"`
	To   string `json:"to"`
	// Reason is "free", "count", "load", "pin", "rule" or "drain".
	Reason string `json:"reason"`
}

// placementRow is c's Placement, or nil when c does not lead.
func placementRow(c *coordinator.Coordinator) *PlacementRow {
	p, ok := c.Placement()
	if !ok {
		return nil
	}
	return rowOf(p)
}

// rowOf is p's schema row.
func rowOf(p coordinator.Placement) *PlacementRow {
	row := &PlacementRow{At: p.At.UTC(), ByLoad: p.ByLoad, Unowned: p.Unowned,
		Unplaceable: orEmpty(p.Unplaceable), UnplaceableWaiting: orEmpty(p.UnplaceableWaiting),
		Nodes: make([]NodeBalanceRow, len(p.Nodes)), Moves: make([]PlacementMoveRow, len(p.Moves))}
	for i, n := range p.Nodes {
		row.Nodes[i] = NodeBalanceRow{Node: n.Node, Session: n.Session, Capacity: n.Capacity, Shards: n.Shards,
			PlannedShards: n.Planned, Load: n.Load, PlannedLoad: n.PlannedLoad, Target: n.Target, Eligible: n.Eligible, Stuck: n.Stuck}
	}
	for i, m := range p.Moves {
		row.Moves[i] = PlacementMoveRow{Shard: m.Shard, From: m.From, To: m.To, Reason: m.Reason}
	}
	return row
}

// orEmpty is s, or an empty list for nil (JSON [] rather than null).
func orEmpty(s []coordinator.ShardID) []coordinator.ShardID {
	if s == nil {
		return []coordinator.ShardID{}
	}
	return s
}
