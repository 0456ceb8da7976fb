package shards

import (
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// awaitInherited reports whether the term's planning waits, and until
// when at the latest: while a session this leader found at its first round
// (one an earlier leader knew, not drained, not being expired) has not
// been heard from, for at most SessionTTL from the term's start. A live
// node's keepalive reaches a new leader soon after the node learns of it,
// so the wait is short; planning before it would hand the shards that move
// to whichever sessions were heard from first, and move them again once
// the others are. A session still unheard after the TTL has no live node
// behind it (it is about to expire) and is only held from then on.
func (b *Balancer) awaitInherited(members map[string]shardown.Member, now time.Time) (time.Time, bool) {
	until := b.activated.Add(b.o.SessionTTL)
	if !now.Before(until) {
		return time.Time{}, false
	}
	for id, m := range members {
		if m.Hold && b.inherited[id] {
			return until, true
		}
	}
	return time.Time{}, false
}

// formationWave handles a round in which no member is stable yet (a
// cluster forming, or every session new to this term): the planner then
// gives shards to every member it may, so those members are recorded as
// stable from now on. Without it they would become stable one by one a
// JoinStabilization later, and a session that joined meanwhile (a node
// restarted right after formation) would be eligible in one round and not
// the next, and a shard sent its way be placed a second time.
func (b *Balancer) formationWave(members map[string]shardown.Member, now time.Time) {
	stab := b.o.JoinStabilization
	if stab <= 0 {
		return
	}
	waiting := false
	for id, m := range members {
		if m.Hold {
			continue
		}
		if !b.firstSeen[id].Add(stab).After(now) {
			return // one is stable: the usual rule applies
		}
		waiting = true
	}
	if !waiting {
		return
	}
	for id, m := range members {
		if m.Hold {
			continue
		}
		t := now.Add(-stab)
		b.firstSeen[id] = t
		m.JoinedAt = uint64(t.Sub(b.epoch))
		members[id] = m
	}
}

// awaitFormation reports whether a round waits before the first grants of
// a table nobody owns (a forming cluster, or one whose every session
// ended), and until when at the latest: while the newest member session
// appeared less than JoinStabilization ago, and at most until SessionTTL
// after the oldest appeared (a stream of joins does not hold the shards
// back for longer). Nodes of a forming cluster open their sessions over a
// second or more; granting every shard to the first few and moving most of
// them once the rest are stable would cost a handoff per moved shard (at
// 64 nodes × 100,000 shards, about 95,000 handoffs, and 12 s with shards in
// flight), where waiting for the membership to settle costs at most
// JoinStabilization after the last session. Kafka's group coordinator
// delays a new group's first rebalance for the same reason.
func (b *Balancer) awaitFormation(v *fsm.View, now time.Time) (time.Time, bool) {
	stab := b.o.JoinStabilization
	if stab <= 0 || b.newest.IsZero() || b.table.free != v.ShardCount() {
		return time.Time{}, false
	}
	until := b.newest.Add(stab)
	if limit := b.oldest.Add(b.o.SessionTTL); limit.Before(until) {
		until = limit
	}
	if !now.Before(until) {
		return time.Time{}, false
	}
	return until, true
}

// noteJoins records the earliest and latest firstSeen of members, for
// awaitFormation.
func (b *Balancer) noteJoins(members map[string]shardown.Member) {
	b.oldest, b.newest = time.Time{}, time.Time{}
	for id := range members {
		t := b.firstSeen[id]
		if b.oldest.IsZero() || t.Before(b.oldest) {
			b.oldest = t
		}
		if t.After(b.newest) {
			b.newest = t
		}
	}
}
