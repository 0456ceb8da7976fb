package shardown

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// seeded returns a generator for case i of a property test; the seed is
// printed on failure so the case can be replayed.
func seeded(t *testing.T, base uint64, i int) (*rand.Rand, uint64) {
	t.Helper()
	seed := base + uint64(i)
	return rand.New(rand.NewPCG(seed, 0x5eed)), seed
}

// baseSeed is the seed of the property tests; change it locally to explore.
const baseSeed = 20261130

// cases returns how many cases a randomized test of the load planner runs:
// def, or HOLDFAST_SHARDOWN_CASES when set.
func cases(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv("HOLDFAST_SHARDOWN_CASES")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("HOLDFAST_SHARDOWN_CASES=%q: want a positive number", v)
	}
	return n
}

// uniform returns n members of weight 1 named m00, m01, ...
func uniform(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{ID: fmt.Sprintf("m%02d", i)}
	}
	return ms
}

// randomMembers returns 1..maxN members, weighted or not.
func randomMembers(r *rand.Rand, maxN int, weighted bool) []Member {
	n := 1 + r.IntN(maxN)
	ms := uniform(n)
	if weighted {
		for i := range ms {
			ms[i].Weight = 0.5 + 3.5*r.Float64()
		}
	}
	return ms
}

// randomTable returns a table of s shards owned at random by members,
// departed owners ("gone*") or nobody.
func randomTable(r *rand.Rand, s int, ms []Member) []string {
	t := make([]string, s)
	for i := range t {
		switch k := r.IntN(10); {
		case k < 6 && len(ms) > 0:
			t[i] = ms[r.IntN(len(ms))].ID
		case k < 8:
			t[i] = fmt.Sprintf("gone%d", r.IntN(3))
		}
	}
	return t
}

// bounds returns each member's [lower, upper] share over the members, as
// the package documentation defines it, computed independently of Plan.
func bounds(ms []Member, s int, eps float64) map[string][2]int {
	if eps == 0 {
		eps = DefaultEpsilon
	}
	w := 0.0
	for _, m := range ms {
		w += weightOf(m)
	}
	b := map[string][2]int{}
	for _, m := range ms {
		q := float64(s) * weightOf(m) / w
		b[m.ID] = [2]int{int(math.Floor(q*(1-eps) + 1e-9)), int(math.Ceil(q*(1+eps) - 1e-9))}
	}
	return b
}

func weightOf(m Member) float64 {
	if m.Weight == 0 {
		return 1
	}
	return m.Weight
}

func loads(t []string) map[string]int {
	l := map[string]int{}
	for _, o := range t {
		if o != "" {
			l[o]++
		}
	}
	return l
}

// checkStep verifies one Plan result against its input: the rate limit,
// moves that start from the current owner (or "" for free shards), go to a
// member, touch each shard once, and a target equal to current with
// departed owners cleared and the moves applied.
func checkStep(t *testing.T, ms []Member, cur, target []string, moves []Move, p Params) {
	t.Helper()
	k := p.MaxMovesInFlight
	if k == 0 {
		k = max(1, p.Shards/16)
	}
	if k > 0 && len(moves) > k {
		t.Fatalf("%d moves, limit %d", len(moves), k)
	}
	live := map[string]bool{}
	for _, m := range ms {
		live[m.ID] = true
	}
	want := slices.Clone(cur)
	for s, o := range want {
		if !live[o] {
			want[s] = ""
		}
	}
	seen := map[ShardID]bool{}
	for _, mv := range moves {
		if int(mv.Shard) >= len(cur) || seen[mv.Shard] {
			t.Fatalf("bad or repeated shard in move %+v", mv)
		}
		seen[mv.Shard] = true
		if mv.From != want[mv.Shard] || mv.To == "" || !live[mv.To] || mv.To == mv.From {
			t.Fatalf("move %+v does not match table owner %q", mv, want[mv.Shard])
		}
		want[mv.Shard] = mv.To
	}
	if !slices.Equal(want, target) {
		t.Fatalf("target is not current+moves:\n got %v\nwant %v", target, want)
	}
}

// converge calls Plan until it returns no moves, checking every step, and
// returns the final table and the number of moves made.
func converge(t *testing.T, ms []Member, cur []string, p Params) ([]string, int) {
	t.Helper()
	total := 0
	for call := 0; ; call++ {
		target, moves, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatal(err)
		}
		checkStep(t, ms, cur, target, moves, p)
		if len(moves) == 0 {
			return target, total
		}
		total += len(moves)
		cur = target
		if call > 4*p.Shards+10 {
			t.Fatalf("no convergence after %d calls", call)
		}
	}
}

// checkBalanced fails unless every member of ms is within its bounds.
func checkBalanced(t *testing.T, ms []Member, table []string, p Params) {
	t.Helper()
	b := bounds(ms, p.Shards, p.Epsilon)
	l := loads(table)
	for _, m := range ms {
		if got := l[m.ID]; got < b[m.ID][0] || got > b[m.ID][1] {
			t.Fatalf("member %s holds %d shards, bounds %v (loads %v)", m.ID, got, b[m.ID], l)
		}
	}
	if len(ms) > 0 {
		for s, o := range table {
			if o == "" {
				t.Fatalf("shard %d unowned after convergence", s)
			}
		}
	}
}
