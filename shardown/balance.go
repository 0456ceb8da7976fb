package shardown

import "math"

// boundTolerance absorbs float rounding when computing the integer bounds,
// so that an exact share such as 32·1.0 is not rounded up to 33.
const boundTolerance = 1e-9

// state is the planner's working copy of the table. Members are indexed in
// ID order; owner[s] is a member index or -1 for a free shard. A Planner
// keeps one state and reuses its buffers from call to call.
type state struct {
	ids      []string
	weight   []float64
	eligible []bool // may receive shards
	hold     []bool // Member.Hold: receives nothing, not even a pinned shard
	inPool   []bool // counts for quotas: eligible or holding shards
	lower    []int
	upper    []int
	load     []int
	unmoved  []int // shards held that no move of this plan has touched
	owner    []int32
	moved    []bool
	moves    []Move
	// Scan cursors: free shards only get fewer, and a member's unmoved
	// shards only get fewer, so the lowest of each never moves backwards.
	freeFrom    int
	unmovedFrom []int
	index       map[string]int32 // member ID → index
	// The table the plan starts from, as member indexes, and the loads in
	// it: kept between the calls of a Planner, so that PlanChanged only
	// reads the shards that changed.
	base     []int32
	baseLoad []int
	ls       loadState // planning by load (Params.Load)
	rl       ruleState // placement rules (Params.Rules)
}

// resize returns s with length n and every element zero, reusing its
// array when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// reset builds the working state from scratch: it indexes the members,
// reads every shard's owner (departed owners count as free), decides
// eligibility and computes every pool member's bounds.
func (st *state) reset(ms []Member, current []string, p Params) {
	st.setMembers(ms, p)
	st.rl.setRules(ms, p)
	n := len(ms)
	st.base, st.baseLoad = resize(st.base, len(current)), resize(st.baseLoad, n)
	if st.rl.on {
		st.rl.was = resize(st.rl.was, len(current))
	}
	// Runs of shards with one owner are common, and equal strings that
	// share their bytes compare in O(1): remember the last owner found.
	lastID, last := "", int32(-1)
	for s, id := range current {
		if id != lastID {
			lastID, last = id, st.lookup(id)
		}
		st.base[s] = st.refused(s, last)
		if st.base[s] >= 0 {
			st.baseLoad[last]++
		}
	}
	st.derive(p)
}

// refused returns owner, the member index owning shard s, or -1 when the
// rules refuse it: the plan then treats s as free and moves it with
// ReasonRule from that owner (kept in rl.was) to one they allow.
func (st *state) refused(s int, owner int32) int32 {
	if !st.rl.on {
		return owner
	}
	st.rl.was[s] = -1
	if owner >= 0 && !st.rl.allows(s, int(owner)) {
		st.rl.was[s] = owner
		return -1
	}
	return owner
}

// setMembers indexes ms (sorted by ID) and decides their eligibility.
func (st *state) setMembers(ms []Member, p Params) {
	n := len(ms)
	st.ids, st.weight = resize(st.ids, n), resize(st.weight, n)
	st.eligible, st.hold = resize(st.eligible, n), resize(st.hold, n)
	if st.index == nil {
		st.index = make(map[string]int32, n)
	}
	clear(st.index)
	anyStable := false
	for i, m := range ms {
		st.ids[i], st.weight[i] = m.ID, m.Weight
		st.index[m.ID] = int32(i)
		st.eligible[i], st.hold[i] = !m.Hold && stable(m, p), m.Hold
		anyStable = anyStable || st.eligible[i]
	}
	for i := range st.eligible {
		st.eligible[i] = st.eligible[i] || (!anyStable && !ms[i].Hold)
	}
}

// lookup returns the index of the member id, or -1.
func (st *state) lookup(id string) int32 {
	if i, ok := st.index[id]; ok {
		return i
	}
	return -1
}

// keptMoves is the most moves whose array a Planner keeps from one call to
// the next.
const keptMoves = 4096

// reuseMoves empties moves for the next plan, keeping its array unless it
// is larger than keptMoves: the plan that assigns a whole table of free
// shards at once (every shard at formation, 6.4 MB of moves at 100,000
// shards) would otherwise stay on the leader's heap for the term, where
// later plans move a few shards.
func reuseMoves(moves []Move) []Move {
	if cap(moves) > keptMoves {
		return nil
	}
	return moves[:0]
}

// derive starts a plan from the table in base: the working table and
// loads, the pool and every pool member's bounds.
func (st *state) derive(p Params) {
	n := len(st.ids)
	st.inPool = resize(st.inPool, n)
	st.lower, st.upper = resize(st.lower, n), resize(st.upper, n)
	st.load, st.unmoved, st.unmovedFrom = resize(st.load, n), resize(st.unmoved, n), resize(st.unmovedFrom, n)
	st.owner, st.moved = resize(st.owner, len(st.base)), resize(st.moved, len(st.base))
	copy(st.owner, st.base)
	copy(st.load, st.baseLoad)
	copy(st.unmoved, st.load)
	st.moves, st.freeFrom = reuseMoves(st.moves), 0
	st.rl.derive(st.eligible)
	total := 0.0
	for i := range st.ids {
		st.inPool[i] = st.eligible[i] || st.load[i] > 0
		if st.inPool[i] {
			total += st.weight[i]
		}
	}
	for i := range st.ids {
		if !st.inPool[i] {
			continue
		}
		q := float64(p.Shards) * (st.weight[i] / total)
		st.lower[i] = int(math.Floor(q*(1-p.Epsilon) + boundTolerance))
		st.upper[i] = int(math.Ceil(q*(1+p.Epsilon) - boundTolerance))
	}
}

// stable reports whether m has existed for at least JoinStabilization.
func stable(m Member, p Params) bool {
	if p.JoinStabilization == 0 {
		return true
	}
	return p.Now >= m.JoinedAt && p.Now-m.JoinedAt >= p.JoinStabilization
}

// The kinds of member a step looks for, as receiver and donor filters.
const (
	anyEligible   = iota // receiver: eligible
	belowLower           // receiver: eligible and below its lower bound
	withRoom             // receiver: eligible, not d, and room below its upper bound
	aboveLowerNot        // donor: above its lower bound, not r
	aboveUpper           // donor: above its upper bound
)

// step plans one move and reports whether it found one. In order of
// priority: grant the lowest free shard; fill an eligible member below its
// lower bound from the most loaded member that can spare a shard; drain a
// member above its upper bound into the least loaded eligible member with
// room. The choice depends only on the state, so stopping after K moves
// and calling Plan again yields the same sequence of moves.
func (st *state) step() bool {
	if s := st.firstFree(); s >= 0 {
		// A member with room first: one at its upper bound would have to
		// give a shard away again, a second move for one grant.
		r := st.receiver(withRoom, -1, s)
		if r < 0 {
			r = st.receiver(anyEligible, -1, s)
		}
		if r < 0 {
			return false
		}
		st.apply(s, r, ReasonFree)
		return true
	}
	if st.rl.on {
		return st.ruleStep()
	}
	r := st.receiver(belowLower, -1, -1)
	if r >= 0 {
		d := st.donor(aboveLowerNot, r)
		if d >= 0 {
			st.apply(st.firstUnmoved(d), r, ReasonCount)
			return true
		}
	}
	d := st.donor(aboveUpper, -1)
	if d < 0 {
		return false
	}
	r = st.receiver(withRoom, d, -1)
	if r < 0 {
		return false
	}
	st.apply(st.firstUnmoved(d), r, ReasonCount)
	return true
}

// receiver returns the pool member of the given kind (other than not, and
// allowed to own shard s unless s is -1) with the smallest load after
// receiving one more shard, relative to weight ((load+1)/weight), ties to
// the lower ID; -1 if none.
func (st *state) receiver(kind, not, s int) int {
	best := -1
	for i := range st.ids {
		if !st.inPool[i] || !st.eligible[i] || i == not || s >= 0 && !st.rl.allows(s, i) ||
			(kind == belowLower && st.load[i] >= st.lower[i]) || (kind == withRoom && st.load[i]+1 > st.upper[i]) {
			continue
		}
		// (l_i+1)/w_i < (l_b+1)/w_b, compared without division.
		if best < 0 || float64(st.load[i]+1)*st.weight[best] < float64(st.load[best]+1)*st.weight[i] {
			best = i
		}
	}
	return best
}

// donor returns the pool member of the given kind (other than not),
// holding a shard not yet moved by this plan, with the largest load
// relative to weight, ties to the lower ID; -1 if none.
func (st *state) donor(kind, not int) int {
	best := -1
	for i := range st.ids {
		if !st.inPool[i] || st.unmoved[i] == 0 || i == not ||
			(kind == aboveLowerNot && st.load[i] <= st.lower[i]) || (kind == aboveUpper && st.load[i] <= st.upper[i]) {
			continue
		}
		if best < 0 || float64(st.load[i])*st.weight[best] > float64(st.load[best])*st.weight[i] {
			best = i
		}
	}
	return best
}

// firstFree returns the lowest free shard that some eligible member may
// own, or -1.
func (st *state) firstFree() int {
	for ; st.freeFrom < len(st.owner); st.freeFrom++ {
		if st.owner[st.freeFrom] < 0 && st.rl.placeable(st.freeFrom) {
			return st.freeFrom
		}
	}
	return -1
}

// firstUnmoved returns the lowest shard owned by i that this plan has not
// moved yet. The caller has checked that one exists.
func (st *state) firstUnmoved(i int) int {
	for s := st.unmovedFrom[i]; s < len(st.owner); s++ {
		if int(st.owner[s]) == i && !st.moved[s] {
			st.unmovedFrom[i] = s
			return s
		}
	}
	panic("shardown: internal error: donor has no unmoved shard")
}

// apply records the move of shard s to member r, planned for reason.
func (st *state) apply(s, r int, reason string) {
	from := ""
	if d := int(st.owner[s]); d >= 0 {
		from = st.ids[d]
		st.load[d]--
		st.unmoved[d]--
	} else if st.rl.on && st.rl.was[s] >= 0 {
		from = st.ids[st.rl.was[s]]
		if reason == ReasonFree {
			reason = ReasonRule
		}
	}
	st.owner[s] = int32(r)
	st.moved[s] = true
	st.load[r]++
	st.moves = append(st.moves, Move{Shard: ShardID(s), From: from, To: st.ids[r], Reason: reason})
}

// table returns the planned table as owner IDs.
func (st *state) table() []string {
	t := make([]string, len(st.owner))
	for s, o := range st.owner {
		if o >= 0 {
			t[s] = st.ids[o]
		}
	}
	return t
}
