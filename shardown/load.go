package shardown

import (
	"math"
	"slices"
)

// DefaultLoadRatio is the balance ratio used when Params.LoadRatio is zero.
const DefaultLoadRatio = 1.10

// Why a move was planned (Move.Reason).
const (
	// ReasonFree: the shard had no owner (never owned, or its owner left).
	ReasonFree = "free"
	// ReasonCount: a member was outside its count bounds.
	ReasonCount = "count"
	// ReasonLoad: a member's reported load was outside the load band.
	ReasonLoad = "load"
)

// loadTolerance absorbs float rounding in the load comparisons.
const loadTolerance = 1e-9

// marginPerLoad, times the two members' targets, is how far below 2x a
// load step's net amount must stay (see closest).
const marginPerLoad = 1e-9

// loadState is the part of the working state used when loads are reported.
type loadState struct {
	on      bool      // this call plans by load
	shard   []float64 // each shard's load (a shard without a report: the mean)
	member  []float64 // each member's load, as planned so far
	before  []float64 // each member's load before this call's moves
	target  []float64 // each pool member's target load (0 outside the pool)
	hottest []float64 // each member's largest shard load
	stuck   []bool    // the member's largest shard alone exceeds the band
	owned   [][]int32 // each member's shards at the start of balancing
}

// loadMode reports whether p carries at least one report with a positive
// total, and fills ls.shard: reported loads, and the mean of the reported
// ones for every shard without a report.
func (ls *loadState) loadMode(p Params) bool {
	ls.on = false
	if len(p.Load) == 0 {
		return false
	}
	sum, n := 0.0, 0
	for _, l := range p.Load {
		if reported(l) {
			sum += l
			n++
		}
	}
	if n == 0 || sum <= 0 {
		return false
	}
	mean := sum / float64(n)
	ls.shard = resize(ls.shard, len(p.Load))
	for s, l := range p.Load {
		if reported(l) {
			ls.shard[s] = l
		} else {
			ls.shard[s] = mean
		}
	}
	ls.on = true
	return true
}

// reported says whether a Params.Load entry is a report (not NaN, >= 0).
func reported(l float64) bool { return !math.IsNaN(l) && l >= 0 }

// runLoad plans by load: free shards first, the heaviest first, each to the
// eligible member with the smallest load per capacity after receiving it;
// then, if a member is outside the trigger band, moves that bring the
// members into the goal band, within the round's budget.
func (st *state) runLoad(p Params) []Move {
	ls := &st.ls
	n := len(st.ids)
	ls.member, ls.before = resize(ls.member, n), resize(ls.before, n)
	for s, o := range st.owner {
		if o >= 0 {
			ls.member[o] += ls.shard[s]
		}
	}
	copy(ls.before, ls.member)
	st.pinStep(p)
	limit := p.MaxMovesInFlight
	full := func() bool { return limit >= 0 && len(st.moves) >= limit }
	var free []int32
	for s, o := range st.owner {
		if o < 0 {
			free = append(free, int32(s))
		}
	}
	slices.SortStableFunc(free, func(a, b int32) int {
		switch la, lb := ls.shard[a], ls.shard[b]; {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	for _, s := range free {
		if full() {
			break
		}
		if !st.rl.placeable(int(s)) {
			continue
		}
		r := st.lightest(int(s), ls.shard[s])
		if r < 0 {
			break
		}
		st.applyLoad(int(s), r, ReasonFree)
	}
	if st.firstFree() >= 0 || full() {
		st.targets(p)
		return st.moves
	}
	st.targets(p)
	dist := st.distance()
	if dist <= p.LoadRatio-1+loadTolerance {
		return st.moves
	}
	budget := -1
	if p.LoadMoves > 0 {
		budget = int(math.Ceil(float64(p.LoadMoves) * dist / (p.LoadRatio - 1)))
	}
	goal := (p.LoadRatio - 1) / 2
	st.ownedLists()
	for done := 0; !full() && (budget < 0 || done < budget); {
		if st.distance() <= goal+loadTolerance {
			break
		}
		room := 2 // a step is one move or an exchange of two
		if limit >= 0 {
			room = min(room, limit-len(st.moves))
		}
		if budget >= 0 {
			room = min(room, budget-done)
		}
		k := st.loadStep(room)
		if k == 0 {
			break
		}
		done += k
	}
	return st.moves
}

// lightest returns the eligible member that may own shard s with the
// smallest (load+l)/weight, ties to the lower ID; -1 if none.
func (st *state) lightest(s int, l float64) int {
	best := -1
	for i := range st.ids {
		if !st.eligible[i] || !st.rl.allows(s, i) {
			continue
		}
		if best < 0 || (st.ls.member[i]+l)*st.weight[best] < (st.ls.member[best]+l)*st.weight[i] {
			best = i
		}
	}
	return best
}

// applyLoad records the move of shard s to member r, keeping the loads.
func (st *state) applyLoad(s, r int, reason string) {
	l := st.ls.shard[s]
	if d := st.owner[s]; d >= 0 {
		st.ls.member[d] -= l
	}
	st.ls.member[r] += l
	st.apply(s, r, reason)
}

// targets computes every pool member's target: the pool's total load
// shared in proportion to capacity. A member whose largest shard alone is
// above LoadRatio times its share is stuck: its target is that shard, and
// the others share the rest (repeated until no further member is stuck).
func (st *state) targets(p Params) {
	ls := &st.ls
	n := len(st.ids)
	ls.target, ls.hottest, ls.stuck = resize(ls.target, n), resize(ls.hottest, n), resize(ls.stuck, n)
	for s, o := range st.owner {
		if o >= 0 && ls.shard[s] > ls.hottest[o] {
			ls.hottest[o] = ls.shard[s]
		}
	}
	for {
		load, weight := 0.0, 0.0
		for i := range st.ids {
			if !st.inPool[i] {
				continue
			}
			if ls.stuck[i] {
				load -= ls.hottest[i]
			} else {
				weight += st.weight[i]
			}
			load += ls.member[i]
		}
		lambda := 0.0
		if weight > 0 {
			lambda = max(load, 0) / weight
		}
		grew := false
		for i := range st.ids {
			if !st.inPool[i] || ls.stuck[i] {
				continue
			}
			if ls.hottest[i] > p.LoadRatio*lambda*st.weight[i]+loadTolerance {
				ls.stuck[i], grew = true, true
			}
		}
		if !grew {
			for i := range st.ids {
				switch {
				case !st.inPool[i]:
					ls.target[i] = 0
				case ls.stuck[i]:
					ls.target[i] = ls.hottest[i]
				default:
					ls.target[i] = lambda * st.weight[i]
				}
			}
			return
		}
	}
}

// distance is how far the members are from their targets: the largest
// load/target-1 of a pool member above its target, or 1-load/target of an
// eligible member below it.
func (st *state) distance() float64 {
	ls := &st.ls
	d := 0.0
	for i := range st.ids {
		t := ls.target[i]
		if !st.inPool[i] || t <= 0 {
			continue
		}
		r := ls.member[i] / t
		if r > 1 {
			d = max(d, r-1)
		} else if st.eligible[i] && !ls.stuck[i] {
			d = max(d, 1-r)
		}
	}
	return d
}

// ownedLists indexes each member's shards, so that a step reads only the
// donor's.
func (st *state) ownedLists() {
	ls := &st.ls
	if cap(ls.owned) < len(st.ids) {
		ls.owned = make([][]int32, len(st.ids))
	}
	ls.owned = ls.owned[:len(st.ids)]
	for i := range ls.owned {
		ls.owned[i] = ls.owned[i][:0]
	}
	for s, o := range st.owner {
		if o >= 0 {
			ls.owned[o] = append(ls.owned[o], int32(s))
		}
	}
	st.sortOwned()
}

// loadStep plans one load step of at most room moves and returns how
// many moves it planned (0 if it found none). The receiver is the eligible
// member furthest below its target (by load/target); the donors, furthest
// above theirs first, are tried in turn: each offers its unmoved shard
// whose load is closest to the amount that evens the two out, among those
// that lower Σ (load-target)²/target (load in (0, 2x)). If no donor has
// such a shard and room allows two moves, an eligible donor may exchange
// a heavier shard for a lighter one of the receiver's whose difference is
// in (0, 2x) (swap). Every step lowers that sum, so balancing ends.
func (st *state) loadStep(room int) int {
	ls := &st.ls
	var receivers []int
	for i := range st.ids {
		if !st.inPool[i] || !st.eligible[i] || ls.stuck[i] || ls.target[i] <= 0 || ls.member[i] >= ls.target[i] {
			continue
		}
		receivers = append(receivers, i)
	}
	slices.SortStableFunc(receivers, func(a, b int) int {
		x, y := ls.member[a]*ls.target[b], ls.member[b]*ls.target[a]
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	if !st.rl.on && len(receivers) > 1 {
		receivers = receivers[:1] // without rules the first receiver takes what any can
	}
	for _, r := range receivers {
		if k := st.loadStepTo(r, room); k > 0 {
			return k
		}
	}
	return 0
}

// loadStepTo plans one load step of at most room moves to receiver r, if
// a donor has a shard or an exchange for it (see loadStep), and returns
// how many moves it planned.
func (st *state) loadStepTo(r, room int) int {
	ls := &st.ls
	var donors []int
	for i := range st.ids {
		if i != r && st.inPool[i] && ls.target[i] > 0 && ls.member[i] > ls.target[i] && st.unmoved[i] > 0 {
			donors = append(donors, i)
		}
	}
	slices.SortStableFunc(donors, func(a, b int) int {
		x, y := ls.member[a]*ls.target[b], ls.member[b]*ls.target[a]
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	// evens returns the amount x that evens d and r out, and the margin
	// below 2x that a move's load must keep: rounding in x grows with the
	// loads, not with x.
	evens := func(d int) (x, eps float64) {
		td, tr := ls.target[d], ls.target[r]
		return ((ls.member[d]-td)*tr - (ls.member[r]-tr)*td) / (td + tr), marginPerLoad * (td + tr)
	}
	for _, d := range donors {
		x, eps := evens(d)
		if best := st.closest(d, r, x, eps); best >= 0 {
			st.applyLoad(best, r, ReasonLoad)
			return 1
		}
	}
	if room < 2 {
		return 0
	}
	for _, d := range donors {
		x, eps := evens(d)
		if st.swap(d, r, x, eps) {
			return 2
		}
	}
	return 0
}
