package shardown

import (
	"math"
	"testing"
)

// closestScan is closest by reading every shard of the donor, as the load
// step did before the lists were sorted: the reference closest must agree
// with.
func (st *state) closestScan(d, r int, x, eps float64) int {
	ls := &st.ls
	best := -1
	for _, s := range ls.owned[d] {
		l := ls.shard[s]
		if st.moved[s] || int(st.owner[s]) != d || l <= 0 || l >= 2*x-eps || x <= eps || !st.rl.allows(int(s), r) {
			continue
		}
		if best < 0 || math.Abs(l-x) < math.Abs(ls.shard[best]-x) || math.Abs(l-x) == math.Abs(ls.shard[best]-x) && int(s) < best {
			best = int(s)
		}
	}
	return best
}

// TestClosestAgreesWithAScan: on random tables (loads drawn from a few
// values, so that ties abound, and some zero), moved shards and amounts,
// closest picks exactly the shard a full scan of the donor's shards picks.
func TestClosestAgreesWithAScan(t *testing.T) {
	for i := range 400 {
		r, seed := seeded(t, baseSeed+9000, i)
		n := 1 + r.IntN(300)
		st := &state{ids: []string{"a", "b", "c"}}
		st.owner, st.moved = make([]int32, n), make([]bool, n)
		st.ls.shard = make([]float64, n)
		values := []float64{0, 0.5, 1, 1, 2, 3, 3, 7.25, 10}
		for s := range n {
			st.owner[s] = int32(r.IntN(3))
			st.moved[s] = r.IntN(5) == 0
			st.ls.shard[s] = values[r.IntN(len(values))]
			if r.IntN(4) == 0 {
				st.ls.shard[s] = r.Float64() * 10
			}
		}
		st.ownedLists()
		for range 20 {
			d := r.IntN(3)
			x := []float64{-1, 0, 0.5, 1, 1.5, 2, 3, 5, 20, r.Float64() * 12}[r.IntN(10)]
			eps := []float64{0, 1e-9, 0.25, 2}[r.IntN(4)]
			if got, want := st.closest(d, 1, x, eps), st.closestScan(d, 1, x, eps); got != want {
				t.Fatalf("seed %d: closest(%d, %v, %v) = %d, a scan picks %d", seed, d, x, eps, got, want)
			}
			if s := st.closest(d, 1, x, eps); s >= 0 && r.IntN(2) == 0 {
				st.moved[s] = true
			}
		}
	}
}
