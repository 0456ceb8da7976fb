package shardown

import "math"

// boundTolerance absorbs float rounding when computing the integer bounds,
// so that an exact share such as 32·1.0 is not rounded up to 33.
const boundTolerance = 1e-9

// state is the planner's working copy of the table. Members are indexed in
// ID order; owner[s] is a member index or -1 for a free shard.
type state struct {
	ids      []string
	weight   []float64
	eligible []bool // may receive shards
	inPool   []bool // counts for quotas: eligible or holding shards
	lower    []int
	upper    []int
	load     []int
	unmoved  []int // shards held that no move of this plan has touched
	owner    []int
	moved    []bool
	moves    []Move
	// Scan cursors: free shards only get fewer, and a member's unmoved
	// shards only get fewer, so the lowest of each never moves backwards.
	freeFrom    int
	unmovedFrom []int
}

// newState builds the working state: it clears the shards of departed
// owners, decides eligibility and computes every pool member's bounds.
func newState(ms []Member, current []string, p Params) *state {
	n := len(ms)
	st := &state{
		ids: make([]string, n), weight: make([]float64, n),
		eligible: make([]bool, n), inPool: make([]bool, n),
		lower: make([]int, n), upper: make([]int, n),
		load: make([]int, n), unmoved: make([]int, n), unmovedFrom: make([]int, n),
		owner: make([]int, len(current)), moved: make([]bool, len(current)),
	}
	index := make(map[string]int, n)
	anyStable := false
	for i, m := range ms {
		st.ids[i], st.weight[i] = m.ID, m.Weight
		index[m.ID] = i
		st.eligible[i] = stable(m, p)
		anyStable = anyStable || st.eligible[i]
	}
	for i := range st.eligible {
		st.eligible[i] = st.eligible[i] || !anyStable
	}
	for s, id := range current {
		i, ok := index[id]
		if id == "" || !ok {
			st.owner[s] = -1
			continue
		}
		st.owner[s] = i
		st.load[i]++
	}
	copy(st.unmoved, st.load)
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
	return st
}

// stable reports whether m has existed for at least JoinStabilization.
func stable(m Member, p Params) bool {
	if p.JoinStabilization == 0 {
		return true
	}
	return p.Now >= m.JoinedAt && p.Now-m.JoinedAt >= p.JoinStabilization
}

// step plans one move and reports whether it found one. In order of
// priority: grant the lowest free shard; fill an eligible member below its
// lower bound from the most loaded member that can spare a shard; drain a
// member above its upper bound into the least loaded eligible member with
// room. The choice depends only on the state, so stopping after K moves
// and calling Plan again yields the same sequence of moves.
func (st *state) step() bool {
	if s := st.firstFree(); s >= 0 {
		r := st.receiver(func(i int) bool { return st.eligible[i] })
		if r < 0 {
			return false
		}
		st.apply(s, r)
		return true
	}
	r := st.receiver(func(i int) bool { return st.eligible[i] && st.load[i] < st.lower[i] })
	if r >= 0 {
		d := st.donor(func(i int) bool { return i != r && st.load[i] > st.lower[i] })
		if d >= 0 {
			st.apply(st.firstUnmoved(d), r)
			return true
		}
	}
	d := st.donor(func(i int) bool { return st.load[i] > st.upper[i] })
	if d < 0 {
		return false
	}
	r = st.receiver(func(i int) bool { return st.eligible[i] && i != d && st.load[i]+1 <= st.upper[i] })
	if r < 0 {
		return false
	}
	st.apply(st.firstUnmoved(d), r)
	return true
}

// receiver returns the member accepted by ok with the smallest load after
// receiving one more shard, relative to weight ((load+1)/weight), ties to
// the lower ID; -1 if none.
func (st *state) receiver(ok func(int) bool) int {
	best := -1
	for i := range st.ids {
		if !st.inPool[i] || !ok(i) {
			continue
		}
		// (l_i+1)/w_i < (l_b+1)/w_b, compared without division.
		if best < 0 || float64(st.load[i]+1)*st.weight[best] < float64(st.load[best]+1)*st.weight[i] {
			best = i
		}
	}
	return best
}

// donor returns the member accepted by ok, holding a shard not yet moved
// by this plan, with the largest load relative to weight, ties to the lower
// ID; -1 if none.
func (st *state) donor(ok func(int) bool) int {
	best := -1
	for i := range st.ids {
		if !st.inPool[i] || st.unmoved[i] == 0 || !ok(i) {
			continue
		}
		if best < 0 || float64(st.load[i])*st.weight[best] > float64(st.load[best])*st.weight[i] {
			best = i
		}
	}
	return best
}

// firstFree returns the lowest free shard, or -1.
func (st *state) firstFree() int {
	for ; st.freeFrom < len(st.owner); st.freeFrom++ {
		if st.owner[st.freeFrom] < 0 {
			return st.freeFrom
		}
	}
	return -1
}

// firstUnmoved returns the lowest shard owned by i that this plan has not
// moved yet. The caller has checked that one exists.
func (st *state) firstUnmoved(i int) int {
	for s := st.unmovedFrom[i]; s < len(st.owner); s++ {
		if st.owner[s] == i && !st.moved[s] {
			st.unmovedFrom[i] = s
			return s
		}
	}
	panic("shardown: internal error: donor has no unmoved shard")
}

// apply records the move of shard s to member r.
func (st *state) apply(s, r int) {
	from := ""
	if d := st.owner[s]; d >= 0 {
		from = st.ids[d]
		st.load[d]--
		st.unmoved[d]--
	}
	st.owner[s] = r
	st.moved[s] = true
	st.load[r]++
	st.moves = append(st.moves, Move{Shard: ShardID(s), From: from, To: st.ids[r]})
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
