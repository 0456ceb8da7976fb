// Package shardown assigns shards to members: a pure function from the live
// sessions (with weights) and the current shard table to a target table and
// an ordered list of moves. It does no I/O, reads no clock, uses no
// randomness, keeps no state and does not depend on map iteration order, so
// every node that runs it on the same inputs gets the same answer.
//
// # Keys and shards
//
// A key belongs to shard ShardFor(key, S): the 64-bit xxHash (XXH64, seed
// 0) of the key, mapped to [0, S) by multiply-shift: floor(h·S / 2^64).
// This mapping is fixed forever (the tests pin known vectors); S is fixed
// when a table is created.
//
// # What Plan guarantees
//
// Let W be the total weight of the pool (defined below) and q = S·w/W the
// fair share of a member of weight w. With slack ε (Params.Epsilon, 5% by
// default) the member's bounds are
//
//	lower = floor(q·(1-ε))    upper = ceil(q·(1+ε))
//
// computed with a 1e-9 tolerance so that exact shares are not rounded away.
// Calling Plan repeatedly, applying its moves each time, reaches a table
// in which every shard is owned and every member is within its bounds
// (unless eligibility, below, makes that impossible); on such a table Plan
// returns no moves. In particular, with n equal members no owner holds more
// than ceil(S/n·(1+ε)) shards.
//
//   - Departed owners: a shard whose owner is not in members (its session
//     expired) is free at once; target shows it unowned until it is
//     granted, and its grant is a Move with From "".
//   - Sticky: a shard changes owner only when a bound requires it; members
//     within their bounds are left alone even if the spread could be
//     smaller.
//   - Joins: the joiner is below its lower bound, so it takes shards from
//     the most loaded members until it reaches floor(q·(1-ε)); members
//     left above their (now lower) upper bound drain into the least loaded
//     members with room, the joiner or another. A join among n equal
//     members moves about S/(n+1) shards: measured at most 0.95 ×
//     ceil(S/(n+1)) in the tests, e.g. 27 for S=256, n=8 and 15 for
//     S=1024, n=63, unless the shards above the new upper bounds are more.
//     When q·(1-ε) < 1 the joiner may receive nothing.
//   - Leaves: only the leaver's shards move (to the least loaded members
//     with room), unless they are too few to bring every member up to its
//     (now higher) lower bound; then the others give only the difference.
//     The tests check both.
//   - Rate limit: at most Params.MaxMovesInFlight moves per call; target
//     is current with only those moves applied. The caller performs them
//     (revoke, release, grant) and calls Plan again. Because each move is
//     chosen from the table alone, the moves of repeated limited calls are
//     the moves one unlimited call would have made, so a flapping member
//     cannot cause more movement than the imbalance it creates.
//   - Join stabilization: a member for which Now-JoinedAt is less than
//     Params.JoinStabilization (or JoinedAt is after Now) receives no
//     shards, unless no member is stable at all, in which case every
//     member is eligible so that a new cluster can start. An ineligible
//     member that already holds shards keeps them and may give them up.
//   - Hold: a member with Member.Hold receives no shards at all (and does
//     not count in "no member is stable"), but keeps what it holds as an
//     ineligible member does.
//   - Pins (Params.Pins): before any other step, each pinned shard moves
//     to its member (a Move with Reason ReasonPin, within the rate limit,
//     join stabilization notwithstanding, but never to a member on Hold),
//     and no other step moves a pinned shard that is on its member. A pin
//     to a member that is not among the members has no effect.
//
// With no members, or no eligible member, every shard is free and Plan
// returns no moves. A single call never moves the same shard twice.
//
// # Balance by load
//
// When Params.Load carries at least one report (a non-negative entry) and
// the reports sum to more than zero, Plan balances by load instead of by
// count; a shard without a report weighs the mean of the reported ones,
// so members without reports are balanced as evenly as by count. The
// count bounds above then do not apply; everything else does (departed
// owners, stickiness, join stabilization, Hold, MaxMovesInFlight, a shard
// moved at most once per call). With R = Params.LoadRatio (1.10 by
// default):
//
//   - Targets: a pool member of capacity w (its Weight) has the target
//     L·w/W, L the total load and W the pool's capacity. A member whose
//     largest shard alone is above R times that share is stuck: no
//     placement can bring it down, so its target is that shard's load and
//     the others share the rest (repeated until no other member is stuck).
//     Planner.Balance reports targets and the stuck flag.
//   - Free shards are granted first, the heaviest first (ties to the lower
//     shard), each to the eligible member with the smallest
//     (load+l)/capacity after receiving it (ties to the lower ID).
//   - Trigger: Plan moves shards by load only when a pool member carries
//     more than R times its target, or an eligible, not stuck member less
//     than (2-R) times it. Inside that band nothing moves: stickiness.
//   - Goal (hysteresis): once triggered it moves until every member is
//     within (1±(R-1)/2) times its target, or no move helps, or the budget
//     is spent. Load that wanders by less than half the band after a
//     balancing therefore moves nothing.
//   - Budget: one call makes at most ceil(Params.LoadMoves·d/(R-1)) load
//     moves, d the distance from balance (the largest |load/target-1| of
//     the members the trigger looks at), so a table far from balance
//     converges in fewer calls and a small imbalance moves a few shards.
//   - A step takes the eligible member furthest below its target as the
//     receiver and tries the members above theirs, furthest first: each
//     offers its unmoved shard whose load is closest to the amount x that
//     evens the two out, among the shards of load in (0, 2x): exactly the
//     moves that lower Σ(load-target)²/target. (A margin of 1e-9 times the
//     two targets is kept below 2x: a move of exactly 2x changes nothing,
//     and rounding must not make it look like a gain, or two members pass
//     a shard back and forth in every call.)
//   - Exchange: if no donor has such a shard (every shard of theirs weighs
//     2x or more), an eligible donor may exchange one of its shards for a
//     lighter one of the receiver's, the difference in (0, 2x): the same
//     gain as a move of the difference. It takes the donor's lightest
//     shard for which the receiver has a partner, and the partner that
//     brings the difference closest to x. The exchange is two moves, the
//     first marked Move.Pair, and needs room for both within
//     MaxMovesInFlight. Without it, 8 shards of load 8 split 4 and 4
//     between two members and 24 of load 1 on a third stay 18% below the
//     band for good.
//   - Every step lowers that sum, so every call ends and repeated calls on
//     a still load converge. They do not in general reach the band: a
//     table of few heavy shards may have no arrangement inside it, and
//     one that does may need more than a move or an exchange to get
//     there.
//
// Repeated rate-limited calls by load are not in general the moves of one
// unlimited call: the budget and the band depend on the table reached. The
// reasons for every move are in Move.Reason.
//
// # The algorithm (by count)
//
// Members are sorted by ID. The pool is the eligible members plus any
// member that currently holds a shard; W and the bounds are computed over
// the pool. Plan then repeats one step until no step applies or the rate
// limit is reached. A step is the first of:
//
//  1. grant the lowest-numbered free shard to the eligible member with the
//     smallest (load+1)/weight, among those that stay within their upper
//     bound if any does (a member pushed over it would give a shard away
//     again: two moves for one grant);
//  2. if an eligible member is below its lower bound, give it (the one
//     with the smallest (load+1)/weight) one shard from the member with the
//     largest load/weight that is above its own lower bound;
//  3. if a member is above its upper bound, move one shard from the one
//     with the largest load/weight to the eligible member with the smallest
//     (load+1)/weight that stays within its upper bound.
//
// Each step lowers the total distance of the members from their bounds, so
// the process ends. Ties between members go to the lower ID; a donor gives
// its lowest-numbered shard that this call has not already moved. Weights
// are compared by cross-multiplication, not division.
//
// # Cost
//
// A call costs one map lookup per shard (to index the table's owners) plus
// O(moves × members) for the steps. Plan allocates its working state and
// the target table afresh on every call (about 21 bytes per shard); a
// Planner keeps the working state from call to call and returns the moves
// only, so a caller that plans on every change of its table allocates
// nothing per shard. At 100,000 shards a call takes about 2 ms on one
// core when nothing moves. Planner.PlanChanged, told which shards changed
// since its previous call, looks up only those: the same call then takes
// about 0.2 ms, most of it copying 4 bytes per shard.
//
// # Placement rules
//
// Params.Rules restrict ranges of shards to members with tags (Rule). A
// shard's owner that its rules refuse counts as no owner: the shard moves
// (Reason ReasonRule) to the allowed eligible member a free shard would
// go to, and the target table shows it unowned until then. A shard no
// eligible member may own is never granted; Planner.Unplaceable lists
// such shards, telling apart those that a member not eligible yet would
// take. Balancing moves only shards their receiver may own, so a table
// under rules may stay outside the bounds: every move still brings it
// closer, and planning still ends.
//
// # What Plan does not do
//
// Plan does not smooth loads: the caller passes smoothed loads (an EWMA)
// and the band's hysteresis absorbs what noise is left.
// Zones (Member.Zone) are read only by rules (see Rule: a shard range
// may require the tag "zone=Z"); Plan does not spread a member's shards,
// or replicas, across zones. Plan does not track
// moves in flight: the caller must not call it with a table that omits a
// handoff it has already started, or the handoff may be planned twice.
// Plan does not balance beyond the bounds: choose a smaller ε for a tighter
// spread at the cost of more moves on every membership change.
package shardown
