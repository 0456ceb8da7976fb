package shards

import (
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// PlanReport describes one planning round of the leader's balancer: how
// each member stood and where the planner aims it, and the moves the
// round started.
type PlanReport struct {
	// At is when the round ran, on the leader's clock.
	At time.Time
	// ByLoad says whether the round planned by reported load (else by
	// count: loads and targets are then in shards).
	ByLoad bool
	// Members are the planner's members in ID order (session IDs), with
	// the node each session belongs to.
	Members []MemberReport
	// Moves are the handoffs and grants the round proposed, in order.
	Moves []PlannedMove
	// Unowned is the number of shards without an owner at the round.
	Unowned int
}

// MemberReport is one member's line of a PlanReport.
type MemberReport struct {
	shardown.MemberBalance
	// Node is the name of the node the session belongs to.
	Node string
}

// PlannedMove is one grant or revoke a round proposed.
type PlannedMove struct {
	Shard    ShardID
	From, To string // session IDs; From "" for a grant
	// Reason is shardown's (ReasonFree, ReasonCount, ReasonLoad), or
	// ReasonDrain for a drained owner's shard.
	Reason string
}

// ReasonDrain is the reason of a revoke that empties a drained session.
const ReasonDrain = "drain"

// params returns the planner's parameters for a round on v at now.
func (b *Balancer) params(v *fsm.View, now time.Time) shardown.Params {
	p := shardown.Params{
		Shards: v.ShardCount(), Epsilon: b.o.Epsilon, MaxMovesInFlight: -1,
		Now: uint64(now.Sub(b.epoch)), JoinStabilization: uint64(b.o.JoinStabilization),
		LoadRatio: b.o.LoadRatio, LoadMoves: b.o.LoadMoves,
	}
	if b.o.Loads != nil {
		b.loads = b.o.Loads(v, b.loads)
		p.Load = b.loads
	}
	return p
}

// publish reports the round (BalancerOptions.Report) and counts its moves
// by reason.
func (b *Balancer) publish(v *fsm.View, now time.Time, grants, revokes []fsm.ShardItem) {
	reason := make(map[uint32]string, len(b.moves))
	for _, m := range b.moves {
		reason[uint32(m.Shard)] = m.Reason
	}
	moves := make([]PlannedMove, 0, len(grants)+len(revokes))
	add := func(it fsm.ShardItem, from, to string) {
		r, ok := reason[it.Shard]
		if !ok {
			r = ReasonDrain
		}
		moves = append(moves, PlannedMove{Shard: ShardID(it.Shard), From: from, To: to, Reason: r})
		b.o.Metrics.moved(r)
	}
	for _, it := range grants {
		add(it, "", it.Session)
	}
	for _, it := range revokes {
		add(it, it.Session, it.To)
	}
	if b.o.Report == nil {
		return
	}
	bal, byLoad := b.planner.Balance(nil)
	rep := &PlanReport{At: now, ByLoad: byLoad, Moves: moves, Unowned: b.table.free, Members: make([]MemberReport, len(bal))}
	for i, m := range bal {
		rep.Members[i].MemberBalance = m
		if s, ok := v.Session(m.ID); ok {
			rep.Members[i].Node = s.Node
		}
	}
	b.o.Report(rep)
}
