package shardown

import (
	"fmt"
	"testing"
)

// decodeCase turns fuzz bytes into a small planning problem: the first
// bytes pick sizes and parameters, the rest owners and member attributes.
func decodeCase(data []byte) ([]Member, []string, Params) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	p := Params{
		Shards:            1 + next()%64,
		Epsilon:           float64(next()%50) / 100,
		MaxMovesInFlight:  next()%10 - 1,
		Now:               uint64(next()),
		JoinStabilization: uint64(next() % 8),
	}
	n := next() % 9
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{ID: fmt.Sprintf("m%d", i), Weight: float64(next() % 5), JoinedAt: uint64(next())}
	}
	cur := make([]string, p.Shards)
	for s := range cur {
		switch v := next() % 12; {
		case v < n:
			cur[s] = ms[v].ID
		case v == 10:
			cur[s] = "gone"
		}
	}
	return ms, cur, p
}

// FuzzPlan checks that Plan never panics, and that every result is a valid
// step (see checkStep) from which repeated calls converge.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{15, 5, 3, 0, 0, 3, 1, 0, 1, 0, 1, 0})
	f.Add([]byte{63, 0, 0, 200, 7, 8, 1, 190, 2, 199, 3, 200, 4, 0, 0, 10, 10, 10, 1, 2, 3})
	f.Add([]byte{31, 49, 9, 5, 5, 4, 0, 0, 0, 9, 2, 2, 1, 1, 10, 11, 0, 0, 0, 0})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, cur, p := decodeCase(data)
		target, moves, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		checkStep(t, ms, cur, target, moves, p)
		converge(t, ms, cur, p)
	})
}
