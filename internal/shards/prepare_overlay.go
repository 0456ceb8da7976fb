package shards

import (
	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// A move whose prepare is under way is the plan's until it ends: each
// round the planner sees its shard on the move's target already (as a
// revoking shard is seen on its target) and plans around it, and the
// balancer proposes the move again itself (overlaidRevokes), so that
// prepareRound carries it on (revoke once ready) instead of abandoning it
// because a later plan, made on a table a little further on, happened to
// send the shard elsewhere. Without this, at 64 nodes × 100,000 shards by
// load almost every prepared move was abandoned the round after it was
// asked, and the table never settled. The planner may still move such a
// shard on from the target (a rule, a pin, balance): the balancer then
// proposes that move, which replaces the prepare.

// overlayPrepares returns the planner's table with every rebalancing move
// under prepare (asked, ready or failed, its owner still a member with its
// grant unchanged, its target a member that may receive shards) shown on
// its target, and every
// prepared move's released shard shown there too, in b.overlay; all is
// true when the planner must read the whole table (this round or the last
// one has an overlay: the planner's kept table is then not the table's).
func (b *Balancer) overlayPrepares(v *fsm.View, current []string, members map[string]shardown.Member, all bool) ([]string, bool) {
	had := b.overlaid
	b.overlaid, b.overlay = false, b.overlay[:0]
	if !b.prepares() || len(b.prep.moves) == 0 {
		return current, all || had
	}
	for id, pm := range b.prep.moves {
		if _, owner := members[pm.owner]; !pm.rebalance || !owner && pm.state != prepRevoked {
			continue // a drained owner's move, or its owner can no longer own shards: the plan decides
		}
		if m, ok := members[pm.to]; !ok || m.Hold || !b.overlayable(v, id, pm) {
			continue
		}
		if !b.overlaid {
			b.overlay = append(b.overlay[:0], current...)
			b.overlaid = true
		}
		b.overlay[id] = pm.to
	}
	if !b.overlaid {
		return current, all || had
	}
	return b.overlay, true
}

// overlayable reports whether pm's move still stands on v: the shard owned
// by pm's owner under pm's grant while it prepares, or released and not
// granted yet once revoked.
func (b *Balancer) overlayable(v *fsm.View, id uint32, pm *prepMove) bool {
	sh, ok := v.Shard(id)
	if !ok {
		return false
	}
	if pm.state == prepRevoked {
		return sh.State == fsm.ShardFree
	}
	return sh.State == fsm.ShardOwned && sh.Owner == pm.owner && sh.Token == pm.token
}

// overlaidRevokes appends to revokes the move of every shard the overlay
// showed on its target under prepare (not revoked yet) that the plan did
// not move on: the balancer's own proposal of the move, which prepareRound
// then carries on.
func (b *Balancer) overlaidRevokes(v *fsm.View, moves []shardown.Move, revoked map[uint32]bool, revokes []fsm.ShardItem) []fsm.ShardItem {
	if !b.overlaid {
		return revokes
	}
	planned := make(map[uint32]bool, len(moves))
	for _, m := range moves {
		planned[uint32(m.Shard)] = true
	}
	for id, pm := range b.prep.moves {
		if pm.state == prepRevoked || planned[id] || revoked[id] || b.overlay[id] != pm.to || !b.overlayable(v, id, pm) {
			continue
		}
		revokes = append(revokes, fsm.ShardItem{Shard: id, Session: pm.owner, Token: pm.token, To: pm.to})
		revoked[id] = true
	}
	return revokes
}
