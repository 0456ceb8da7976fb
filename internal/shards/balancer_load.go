package shards

import (
	"context"
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
	// Unplaceable are the shards whose placement rules no eligible member
	// passes, in shard order: they stay unowned (an owner the rules refuse
	// is revoked) until a node with the tags joins or the rules change.
	Unplaceable []Unplaceable
}

// Unplaceable is a shard that no eligible member may own.
type Unplaceable struct {
	Shard ShardID
	// Waiting says a member that is not eligible yet (joining, not heard
	// from) passes the shard's rules: it goes there once that member is.
	Waiting bool
}

// ReasonRule is the reason of a revoke of a shard whose rules its owner
// no longer passes, when no member that passes them can take it now.
const ReasonRule = shardown.ReasonRule

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

// params returns the planner's parameters for a round on v at now: the
// loads, and the pins of v resolved to the members' sessions.
func (b *Balancer) params(v *fsm.View, members map[string]shardown.Member, now time.Time) shardown.Params {
	p := shardown.Params{
		Shards: v.ShardCount(), Epsilon: b.o.Epsilon, MaxMovesInFlight: -1,
		Now: uint64(now.Sub(b.epoch)), JoinStabilization: uint64(b.o.JoinStabilization),
		LoadRatio: b.o.LoadRatio, LoadMoves: b.o.LoadMoves,
	}
	if b.o.Loads != nil {
		b.loads = b.o.Loads(v, b.loads)
		p.Load = b.loads
	}
	p.Pins = pinsFor(v, members)
	for _, r := range v.Rules() {
		p.Rules = append(p.Rules, shardown.Rule{First: ShardID(r.First), Last: ShardID(r.Last), Require: r.Require})
	}
	return p
}

// revokeUnplaceable appends to revokes a revoke (with no target) of every
// owned shard, not already revoked this round, whose rules no member
// passes, not even one that is not eligible yet; it records the round's
// unplaceable shards for the report.
func (b *Balancer) revokeUnplaceable(v *fsm.View, revoked map[uint32]bool, revokes []fsm.ShardItem) []fsm.ShardItem {
	if b.ruleRevokes == nil {
		b.ruleRevokes = map[uint32]bool{}
	}
	clear(b.ruleRevokes)
	un, waiting := b.planner.Unplaceable(b.unplaceable[:0])
	b.unplaceable, b.waiting = un, waiting
	for i, s := range un {
		cur, ok := v.Shard(uint32(s))
		if !ok || waiting[i] || cur.State != fsm.ShardOwned || revoked[cur.ID] {
			continue
		}
		revokes = append(revokes, fsm.ShardItem{Shard: cur.ID, Session: cur.Owner, Token: cur.Token})
		revoked[cur.ID] = true
		b.ruleRevokes[cur.ID] = true
	}
	return revokes
}

// pinsFor resolves v's pins (by node name) to the members' sessions: a
// node's newest session among members (the highest generation, then the
// highest ID). Pins to a node without a member are left out.
func pinsFor(v *fsm.View, members map[string]shardown.Member) []shardown.Pin {
	pins := v.Pins()
	if len(pins) == 0 {
		return nil
	}
	byNode := map[string]fsm.Session{}
	for id := range members {
		s, ok := v.Session(id)
		if !ok {
			continue
		}
		if o, ok := byNode[s.Node]; !ok || s.Gen > o.Gen || s.Gen == o.Gen && s.ID > o.ID {
			byNode[s.Node] = s
		}
	}
	out := make([]shardown.Pin, 0, len(pins))
	for _, pin := range pins {
		if s, ok := byNode[pin.Node]; ok {
			out = append(out, shardown.Pin{Shard: ShardID(pin.Shard), Member: s.ID})
		}
	}
	return out
}

// clearMoves commits the clearing of every one-off move (a pin with Once)
// whose shard is now owned on its node.
func (b *Balancer) clearMoves(ctx context.Context, v *fsm.View) {
	for _, pin := range v.Pins() {
		if !pin.Once {
			continue
		}
		sh, ok := v.Shard(pin.Shard)
		if !ok || sh.State != fsm.ShardOwned || sh.OwnerNode != pin.Node {
			continue
		}
		_, err := b.o.Apply(ctx, fsm.Command{Op: fsm.OpShardPin, Pin: &fsm.PinCmd{Shard: pin.Shard, Node: pin.Node, Clear: true}})
		if err != nil {
			b.o.Log.Warn("clearing a completed shard move failed", "shard", pin.Shard, "error", err)
			return
		}
		b.o.Log.Info("shard moved as asked", "shard", pin.Shard, "node", pin.Node)
	}
}

// publish reports the round (BalancerOptions.Report) and counts its moves
// by reason.
func (b *Balancer) publish(v *fsm.View, now time.Time, grants, revokes []fsm.ShardItem, planned map[uint32]plannedMove) {
	rep := b.report(v, now, grants, revokes, planned, true)
	if b.o.Report != nil {
		b.o.Report(rep)
	}
}

// report describes a round's plan: the members' balance and the moves
// proposed, each with its reason (planned: plannedMoves of the round's
// moves); count says to count the moves in the metrics.
//
// A revoke whose prepare began in an earlier round (the move carried on,
// prepare_overlay.go) is reported under the reason it was planned for and
// is not counted again: the metric counts each move once, when first
// proposed.
func (b *Balancer) report(v *fsm.View, now time.Time, grants, revokes []fsm.ShardItem, planned map[uint32]plannedMove, count bool) *PlanReport {
	moves := make([]PlannedMove, 0, len(grants)+len(revokes))
	add := func(it fsm.ShardItem, from, to string) {
		p, ok := planned[it.Shard]
		r := p.reason
		pm := b.prep.moves[it.Shard]
		carried := from != "" && pm != nil && pm.owner == from && pm.token == it.Token && pm.to == to && pm.state != prepRevoked
		switch {
		case ok:
		case carried && pm.reason != "":
			r = pm.reason
		case b.ruleRevokes[it.Shard]:
			r = ReasonRule
		default:
			r = ReasonDrain
		}
		moves = append(moves, PlannedMove{Shard: ShardID(it.Shard), From: from, To: to, Reason: r})
		if count && !carried {
			b.o.Metrics.moved(r)
		}
	}
	for _, it := range grants {
		add(it, "", it.Session)
	}
	for _, it := range revokes {
		add(it, it.Session, it.To)
	}
	bal, byLoad := b.planner.Balance(nil)
	rep := &PlanReport{At: now, ByLoad: byLoad, Moves: moves, Unowned: b.table.free, Members: make([]MemberReport, len(bal))}
	for i, s := range b.unplaceable {
		rep.Unplaceable = append(rep.Unplaceable, Unplaceable{Shard: s, Waiting: b.waiting[i]})
	}
	for i, m := range bal {
		rep.Members[i].MemberBalance = m
		if s, ok := v.Session(m.ID); ok {
			rep.Members[i].Node = s.Node
		}
	}
	return rep
}

// pairFits reports whether both halves of an exchange (shardown's
// Move.Pair) would be revoked this round, as plan decides each: the shard
// owned by a member other than its target, and the budget left or the
// target already preparing. A half made alone would leave the two nodes
// further from their targets, so the round makes both or neither.
func (b *Balancer) pairFits(v *fsm.View, members map[string]shardown.Member, pair []shardown.Move, budget int) bool {
	for _, m := range pair {
		cur, _ := v.Shard(uint32(m.Shard))
		if cur.State != fsm.ShardOwned || cur.Owner == m.To || members[cur.Owner].ID == "" {
			return false
		}
		if budget <= 0 && !b.preparing(cur.ID, cur.Token, m.To) {
			return false
		}
		budget--
	}
	return true
}
