package shardown

import (
	"fmt"
	"slices"
)

// ReasonPin: an operator pinned the shard to the receiving member.
const ReasonPin = "pin"

// Pin places one shard on one member, whatever the balance: Params.Pins.
type Pin struct {
	// Shard is the pinned shard.
	Shard ShardID
	// Member is the ID of the member it must be on. A pin to a member that
	// is not among the members, or is on Hold, has no effect: the shard
	// is placed as any other until that member is back.
	Member string
}

// checkPins validates p.Pins: shards in range, each at most once.
func checkPins(p Params) error {
	seen := make(map[ShardID]bool, len(p.Pins))
	for _, pin := range p.Pins {
		if int(pin.Shard) >= p.Shards || seen[pin.Shard] || pin.Member == "" {
			return fmt.Errorf("%w: pin of shard %d to %q: out of range, repeated or without a member", ErrInvalid, pin.Shard, pin.Member)
		}
		seen[pin.Shard] = true
	}
	return nil
}

// pinStep moves every pinned shard to its member (a grant or a move with
// ReasonPin, join stabilization notwithstanding, within the rate limit),
// and freezes the pinned shards already there: no later step of the call
// moves them, as if this call had moved them.
func (st *state) pinStep(p Params) {
	if len(p.Pins) == 0 {
		return
	}
	pins := slices.Clone(p.Pins)
	slices.SortFunc(pins, func(a, b Pin) int { return int(a.Shard) - int(b.Shard) })
	for _, pin := range pins {
		r := st.lookup(pin.Member)
		s := int(pin.Shard)
		if r < 0 || st.hold[r] || !st.rl.allows(s, int(r)) {
			continue
		}
		if st.owner[s] == r {
			if !st.moved[s] {
				st.moved[s] = true
				st.unmoved[r]--
			}
			continue
		}
		if p.MaxMovesInFlight >= 0 && len(st.moves) >= p.MaxMovesInFlight {
			continue
		}
		if st.ls.on {
			st.applyLoad(s, int(r), ReasonPin)
		} else {
			st.apply(s, int(r), ReasonPin)
		}
	}
}
