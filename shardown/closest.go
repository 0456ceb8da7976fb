package shardown

import (
	"cmp"
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
// an amount x: among d's unmoved shards of load in (0, 2x) that r may
// own, the one whose load is closest to x, ties to the lower shard; -1 if
// none. It reads d's list sorted by sortOwned.
func (st *state) closest(d, r int, x float64) int {
	ls := &st.ls
	if !(x > 0) {
		return -1
	}
	list := ls.owned[d]
	ok := func(s int32) bool {
		return !st.moved[s] && int(st.owner[s]) == d && st.rl.allows(int(s), r)
	}
	i := sort.Search(len(list), func(k int) bool { return ls.shard[list[k]] >= x })
	right := -1 // the lowest load >= x (the lowest shard among equal loads)
	for k := i; k < len(list) && ls.shard[list[k]] < 2*x; k++ {
		if ok(list[k]) {
			right = int(list[k])
			break
		}
	}
	left := -1 // the highest load < x (the lowest shard among equal loads)
	for k := i - 1; k >= 0 && ls.shard[list[k]] > 0; k-- {
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
	dl, dr := x-ls.shard[left], ls.shard[right]-x
	switch {
	case dl < dr:
		return left
	case dr < dl:
		return right
	}
	return min(left, right)
}
