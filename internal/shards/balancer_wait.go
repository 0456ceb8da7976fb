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
