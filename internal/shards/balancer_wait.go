package shards

import (
	"time"

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
