package shardown

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ShardID names a shard: an integer in [0, Params.Shards).
type ShardID uint32

// DefaultEpsilon is the balance slack used when Params.Epsilon is zero.
const DefaultEpsilon = 0.05

// ErrInvalid is returned, wrapped with a message naming the field or member
// at fault, when Plan is given inputs it cannot plan for: a non-positive
// shard count, a table of the wrong length, an empty or duplicate member ID,
// a negative or non-finite weight, or an epsilon outside [0, 1). Test for it
// with errors.Is(err, ErrInvalid).
var ErrInvalid = errors.New("shardown: invalid input")

// Member is one live session that may own shards.
type Member struct {
	// ID identifies the member. It must be non-empty (the empty string
	// means "unowned" in a table) and unique among the members.
	ID string
	// Weight is the member's relative capacity. Zero means 1; negative,
	// NaN and infinite weights are rejected.
	Weight float64
	// Zone names the member's failure domain. Rules read it as the tag
	// ZoneTag(Zone); nothing else does: Plan does not spread shards across
	// zones (see the package documentation).
	Zone string
	// Tags are the member's labels (such as "ssd" or "role=batch") that
	// Params.Rules require of the owners of some shards.
	Tags []string
	// JoinedAt is the logical time (for example the raft index) at which
	// the member's session was created, in the same unit as Params.Now.
	JoinedAt uint64
	// Hold makes the member keep the shards it holds (it may still give
	// them up to restore the bounds) but receive none, stable or not, and
	// it does not count as stable when the planner asks whether any
	// member is (see Params.JoinStabilization): a member the caller is not
	// sure of yet.
	Hold bool
}

// Move is one ownership change: shard Shard passes from From to To.
type Move struct {
	// Shard is the shard that changes owner.
	Shard ShardID
	// Pair marks the first half of an exchange (by load, see "Balance by
	// load" in the package documentation): the next move takes a lighter
	// shard the other way between the same two members. Either half alone
	// may leave the two further from their targets than before, so a
	// caller that carries out only some of the moves carries out both
	// halves or neither. (The field sits beside Shard, in what would
	// otherwise be padding, so a Move stays 56 bytes on 64-bit platforms:
	// a leader keeps a round's moves, 100,000 at a cluster's first grants.)
	Pair bool
	// From is the current owner, or "" when the shard is free (never
	// owned, or its owner's session has expired): a grant.
	From string
	// To is the new owner; never "".
	To string
	// Reason says why the move was planned: ReasonFree, ReasonCount,
	// ReasonLoad, ReasonPin or ReasonRule.
	Reason string
}

// Params tunes Plan. The zero value of every field except Shards selects a
// sensible default; Params is taken by value and never written back.
type Params struct {
	// Shards is S, the fixed number of shards. It must be > 0.
	Shards int
	// Epsilon is the balance slack ε in [0, 1). A member of weight w, in a
	// pool of total weight W, is balanced when it holds between
	// floor(S·w/W·(1-ε)) and ceil(S·w/W·(1+ε)) shards. Zero selects
	// DefaultEpsilon; use a tiny positive value for no slack.
	Epsilon float64
	// MaxMovesInFlight is K, the most moves one call returns. Zero selects
	// max(1, S/16); a negative value means no limit.
	MaxMovesInFlight int
	// Now is the caller's logical time, in the unit of Member.JoinedAt.
	// Plan reads no clock.
	Now uint64
	// JoinStabilization is how long a member must have existed
	// (Now-JoinedAt >= JoinStabilization) before it receives shards,
	// unless no member is stable yet, in which case every member is
	// eligible (bootstrap). Zero means members are eligible at once.
	JoinStabilization uint64

	// Load is each shard's reported load (for example requests per
	// second, smoothed), indexed by shard: nil, or of length Shards. A
	// negative or NaN entry means the shard has no report; it counts as
	// the mean of the reported ones. With no report at all (or reports
	// that sum to zero) Plan balances by count as described in the
	// package documentation; otherwise it balances by load (see "Balance
	// by load" there) and the count bounds do not apply.
	Load []float64
	// LoadRatio is the load band R in (1, 2): by load, Plan moves shards
	// only when a member's load is above R times its target or an
	// eligible member's below (2-R) times it, and then moves until every
	// member is within half that band, (1±(R-1)/2) times its target: the
	// gap between the two is the hysteresis that keeps noise from causing
	// moves. Zero selects DefaultLoadRatio (1.10).
	LoadRatio float64
	// LoadMoves is the load moves one call plans when the members are
	// just outside the band (distance R-1 from their targets); the budget
	// grows in proportion with the distance (and stays within
	// MaxMovesInFlight). Zero selects max(1, Shards/64); a negative value
	// means no budget other than MaxMovesInFlight.
	LoadMoves int
	// Pins place shards on members (see Pin): each pinned shard moves to
	// its member first (Reason ReasonPin), and no other move takes it
	// away. A shard appears at most once.
	Pins []Pin
	// Rules restrict the owners of ranges of shards to members with tags
	// (see Rule); at most MaxRules.
	Rules []Rule
}

// withDefaults returns p with zero fields replaced by their defaults and
// validates it.
func (p Params) withDefaults() (Params, error) {
	if p.Shards <= 0 {
		return p, fmt.Errorf("%w: Params.Shards must be > 0, got %d", ErrInvalid, p.Shards)
	}
	if p.Shards > math.MaxUint32 {
		return p, fmt.Errorf("%w: Params.Shards must fit in a ShardID, got %d", ErrInvalid, p.Shards)
	}
	if math.IsNaN(p.Epsilon) || p.Epsilon < 0 || p.Epsilon >= 1 {
		return p, fmt.Errorf("%w: Params.Epsilon must be in [0, 1), got %v", ErrInvalid, p.Epsilon)
	}
	if p.Epsilon == 0 {
		p.Epsilon = DefaultEpsilon
	}
	if p.MaxMovesInFlight == 0 {
		p.MaxMovesInFlight = max(1, p.Shards/16)
	}
	if len(p.Load) != 0 && len(p.Load) != p.Shards {
		return p, fmt.Errorf("%w: len(Params.Load) is %d, want 0 or Params.Shards = %d", ErrInvalid, len(p.Load), p.Shards)
	}
	for s, l := range p.Load {
		if math.IsInf(l, 0) {
			return p, fmt.Errorf("%w: Params.Load[%d] is %v, want a finite load", ErrInvalid, s, l)
		}
	}
	if math.IsNaN(p.LoadRatio) || p.LoadRatio != 0 && (p.LoadRatio <= 1 || p.LoadRatio >= 2) {
		return p, fmt.Errorf("%w: Params.LoadRatio must be in (1, 2), got %v", ErrInvalid, p.LoadRatio)
	}
	if p.LoadRatio == 0 {
		p.LoadRatio = DefaultLoadRatio
	}
	if p.LoadMoves == 0 {
		p.LoadMoves = max(1, p.Shards/64)
	}
	if err := checkPins(p); err != nil {
		return p, err
	}
	if err := checkRules(p); err != nil {
		return p, err
	}
	return p, nil
}

// Plan computes the next step from the current shard table towards a
// balanced one. members are the live sessions (in any order); current[s]
// is the owner of shard s, or "" if it has none. Plan returns the moves to
// start now, at most Params.MaxMovesInFlight of them, free-shard grants
// first in shard order and then rebalancing moves in the order they were
// planned, and target, which is current with the shards of departed owners
// cleared and exactly the returned moves applied.
//
// The caller performs the moves (revoke, release, grant) and calls Plan
// again with the new table; repeated calls converge to a balanced table,
// after which Plan returns no moves. Plan is a pure function: it does no
// I/O, reads no clock, uses no randomness and does not depend on the order
// of members or on map iteration. It never modifies its arguments.
func Plan(members []Member, current []string, p Params) (target []string, moves []Move, err error) {
	var pl Planner
	moves, err = pl.Plan(members, current, p)
	if err != nil {
		return nil, nil, err
	}
	return pl.st.table(), moves, nil
}

// normalize validates members and returns a copy sorted by ID with default
// weights filled in.
func normalize(members []Member) ([]Member, error) {
	ms := slices.Clone(members)
	for i := range ms {
		m := &ms[i]
		if slices.Contains(m.Tags, "") {
			return nil, fmt.Errorf("%w: member %q has an empty tag", ErrInvalid, m.ID)
		}
		if m.ID == "" {
			return nil, fmt.Errorf("%w: member %d has an empty ID", ErrInvalid, i)
		}
		if math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) || m.Weight < 0 {
			return nil, fmt.Errorf("%w: member %q has weight %v, want > 0 (or 0 for the default 1)", ErrInvalid, m.ID, m.Weight)
		}
		if m.Weight == 0 {
			m.Weight = 1
		}
	}
	total := 0.0
	for _, m := range ms {
		total += m.Weight
	}
	if math.IsInf(total, 0) {
		return nil, fmt.Errorf("%w: the sum of member weights overflows", ErrInvalid)
	}
	slices.SortFunc(ms, func(a, b Member) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	for i := 1; i < len(ms); i++ {
		if ms[i].ID == ms[i-1].ID {
			return nil, fmt.Errorf("%w: duplicate member ID %q", ErrInvalid, ms[i].ID)
		}
	}
	return ms, nil
}
