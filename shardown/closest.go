package shardown

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// sortOwned orders each member's list of shards by load, then by shard,
// so that closest finds a donor's best shard by bisection rather than by
// reading all of them (a donor holding 30,000 shards, a round of 6,000
// moves: the difference between milliseconds and seconds).
func (st *state) sortOwned() {
	ls := &st.ls
	for _, list := range ls.owned {
		slices.SortFunc(list, func(a, b int32) int {
			if c := cmp.Compare(ls.shard[a], ls.shard[b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
}

// closest returns donor d's shard that a load step gives receiver r for
// an amount x: among d's unmoved shards that r may own with a load in
// (0, 2x-eps), the one whose load is closest to x, ties to the lower
// shard; -1 if none (and always when x <= eps). A move of load l lowers
// Σ(load-target)²/target exactly when l is in (0, 2x); eps keeps out the
// moves at 2x that lower it by nothing but rounding, which would otherwise
// pass a shard back and forth between two members in every call. It reads
// d's list sorted by sortOwned.
func (st *state) closest(d, r int, x, eps float64) int {
	if !(x > eps) {
		return -1
	}
	return st.closestIn(d, r, x, 0, 2*x-eps)
}

// closestIn returns, among member d's unmoved shards that r may own with
// a load in the open interval (lo, hi), the one whose load is closest to
// c, ties to the lower shard; -1 if none. The caller keeps c in (lo, hi).
// It reads d's list sorted by sortOwned, by bisection.
func (st *state) closestIn(d, r int, c, lo, hi float64) int {
	ls := &st.ls
	list := ls.owned[d]
	ok := func(s int32) bool {
		return !st.moved[s] && int(st.owner[s]) == d && st.rl.allows(int(s), r)
	}
	i := sort.Search(len(list), func(k int) bool { return ls.shard[list[k]] >= c })
	right := -1 // the lowest load >= c (the lowest shard among equal loads)
	for k := i; k < len(list) && ls.shard[list[k]] < hi; k++ {
		if ok(list[k]) {
			right = int(list[k])
			break
		}
	}
	left := -1 // the highest load < c (the lowest shard among equal loads)
	for k := i - 1; k >= 0 && ls.shard[list[k]] > lo; k-- {
		s := list[k]
		if left >= 0 && ls.shard[s] != ls.shard[left] {
			break
		}
		if ok(s) {
			left = int(s)
		}
	}
	switch {
	case left < 0:
		return right
	case right < 0:
		return left
	}
	dl, dr := c-ls.shard[left], ls.shard[right]-c
	switch {
	case dl < dr:
		return left
	case dr < dl:
		return right
	}
	return min(left, right)
}

// swap plans, when no single shard of donor d suits receiver r for the
// amount x, an exchange: d's shard a goes to r and r's shard b goes to d,
// with load(a)-load(b) in (0, 2x-eps). Only the net amount changes the two
// members' loads, so the exchange lowers Σ(load-target)²/target exactly
// when a single move of that amount would. It takes the lightest a (ties
// to the lower shard) for which such a b exists, and the b that brings
// the net amount closest to x (closestIn). d must be eligible, since it
// receives b. The move of a is marked Pair. It reports whether it planned
// the exchange.
//
// Without it, a donor holding only shards heavier than 2x blocks the
// receiver for good: three members with 8 shards of load 8 and 24 of load
// 1, the cold ones all on one member and the hot ones split 4 and 4, stay
// at 24, 32 and 32 against targets of 29.3, 18% below the band, though one
// exchange of a hot shard for a cold one brings them to 31, 25 and 32.
func (st *state) swap(d, r int, x, eps float64) bool {
	ls := &st.ls
	recv := ls.owned[r]
	if !st.eligible[d] || !(x > eps) || len(recv) == 0 {
		return false
	}
	top := ls.shard[recv[len(recv)-1]] // no b is heavier
	list := ls.owned[d]
	tried := math.NaN()
	for k := sort.Search(len(list), func(k int) bool { return ls.shard[list[k]] > 0 }); k < len(list); k++ {
		a := list[k]
		la := ls.shard[a]
		if la-top >= 2*x-eps {
			break // every b is too light for this a and the heavier ones
		}
		if la == tried || st.moved[a] || int(st.owner[a]) != d || !st.rl.allows(int(a), r) {
			continue
		}
		tried = la
		if b := st.closestIn(r, d, la-x, la-2*x+eps, la); b >= 0 {
			st.applyLoad(int(a), r, ReasonLoad)
			st.moves[len(st.moves)-1].Pair = true
			st.applyLoad(b, d, ReasonLoad)
			return true
		}
	}
	return false
}
