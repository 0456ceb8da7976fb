package shardown

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestPlanErrors(t *testing.T) {
	ok := uniform(2)
	cases := []struct {
		name string
		ms   []Member
		cur  []string
		p    Params
	}{
		{"zero shards", ok, nil, Params{}},
		{"negative shards", ok, nil, Params{Shards: -1}},
		{"short table", ok, make([]string, 3), Params{Shards: 4}},
		{"duplicate", []Member{{ID: "a"}, {ID: "b"}, {ID: "a"}}, make([]string, 4), Params{Shards: 4}},
		{"empty id", []Member{{ID: ""}}, make([]string, 4), Params{Shards: 4}},
		{"negative weight", []Member{{ID: "a", Weight: -1}}, make([]string, 4), Params{Shards: 4}},
		{"nan weight", []Member{{ID: "a", Weight: math.NaN()}}, make([]string, 4), Params{Shards: 4}},
		{"inf weight", []Member{{ID: "a", Weight: math.Inf(1)}}, make([]string, 4), Params{Shards: 4}},
		{"weight overflow", []Member{{ID: "a", Weight: math.MaxFloat64}, {ID: "b", Weight: math.MaxFloat64}}, make([]string, 4), Params{Shards: 4}},
		{"negative epsilon", ok, make([]string, 4), Params{Shards: 4, Epsilon: -0.1}},
		{"epsilon one", ok, make([]string, 4), Params{Shards: 4, Epsilon: 1}},
	}
	for _, c := range cases {
		_, _, err := Plan(c.ms, c.cur, c.p)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func TestPlanNoMembers(t *testing.T) {
	cur := []string{"a", "", "b", "a"}
	target, moves, err := Plan(nil, cur, Params{Shards: 4})
	if err != nil || len(moves) != 0 || !slices.Equal(target, make([]string, 4)) {
		t.Fatalf("target %v moves %v err %v, want all free and no moves", target, moves, err)
	}
}

func TestPlanDoesNotModifyInputs(t *testing.T) {
	ms := []Member{{ID: "b", Weight: 0}, {ID: "a"}}
	cur := []string{"gone", "", "a", "a"}
	msCopy, curCopy := slices.Clone(ms), slices.Clone(cur)
	if _, _, err := Plan(ms, cur, Params{Shards: 4, MaxMovesInFlight: -1}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ms, msCopy) || !slices.Equal(cur, curCopy) {
		t.Fatal("Plan modified its arguments")
	}
}

// Property 1: after convergence every member is within its bounds, weighted
// or not, from any starting table.
func TestPropertyBalance(t *testing.T) {
	t.Parallel()
	for i := range 1500 {
		r, seed := seeded(t, baseSeed, i)
		ms := randomMembers(r, 20, i%2 == 1)
		p := Params{Shards: 1 + r.IntN(300), Epsilon: []float64{0, 0.01, 0.1, 0.25}[r.IntN(4)]}
		if r.IntN(3) == 0 {
			p.MaxMovesInFlight = -1
		}
		cur := randomTable(r, p.Shards, ms)
		final, _ := converge(t, ms, cur, p)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
		checkBalanced(t, ms, final, p)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// Property 2: the output does not depend on member order, and two calls
// give the same answer.
func TestPropertyDeterminism(t *testing.T) {
	t.Parallel()
	for i := range 1000 {
		r, seed := seeded(t, baseSeed+1e6, i)
		ms := randomMembers(r, 16, i%2 == 1)
		for j := range ms {
			ms[j].JoinedAt = uint64(r.IntN(20))
		}
		p := Params{Shards: 1 + r.IntN(200), MaxMovesInFlight: r.IntN(20) - 1, Now: 20, JoinStabilization: uint64(r.IntN(10))}
		cur := randomTable(r, p.Shards, ms)
		t1, m1, err1 := Plan(ms, cur, p)
		t2, m2, err2 := Plan(ms, cur, p)
		shuffled := slices.Clone(ms)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		t3, m3, err3 := Plan(shuffled, cur, p)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("seed %d: errors %v %v %v", seed, err1, err2, err3)
		}
		if !slices.Equal(t1, t2) || !slices.Equal(m1, m2) || !slices.Equal(t1, t3) || !slices.Equal(m1, m3) {
			t.Fatalf("seed %d: outputs differ", seed)
		}
	}
}

// Property 5: a converged table with the same members yields no moves.
func TestPropertyNoMoveWhenUnchanged(t *testing.T) {
	t.Parallel()
	for i := range 500 {
		r, seed := seeded(t, baseSeed+2e6, i)
		ms := randomMembers(r, 20, i%2 == 1)
		p := Params{Shards: 1 + r.IntN(300)}
		final, _ := converge(t, ms, randomTable(r, p.Shards, ms), p)
		target, moves, err := Plan(ms, final, p)
		if err != nil || len(moves) != 0 || !slices.Equal(target, final) {
			t.Fatalf("seed %d: converged table gave %d moves (err %v)", seed, len(moves), err)
		}
	}
}

// Property 7: no call returns more than MaxMovesInFlight moves, for any K,
// including the default.
func TestPropertyRateLimit(t *testing.T) {
	t.Parallel()
	for i := range 500 {
		r, seed := seeded(t, baseSeed+3e6, i)
		ms := randomMembers(r, 12, false)
		p := Params{Shards: 1 + r.IntN(256), MaxMovesInFlight: r.IntN(8)}
		cur := randomTable(r, p.Shards, ms)
		_, moves, err := Plan(ms, cur, p)
		k := p.MaxMovesInFlight
		if k == 0 {
			k = max(1, p.Shards/16)
		}
		if err != nil || len(moves) > k {
			t.Fatalf("seed %d: %d moves, limit %d (err %v)", seed, len(moves), k, err)
		}
		converge(t, ms, cur, p) // checks the limit on every call
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// Rate limiting does not change where Plan goes: the moves of repeated
// limited calls are the moves of one unlimited call.
func TestRateLimitSameTrajectory(t *testing.T) {
	t.Parallel()
	for i := range 300 {
		r, seed := seeded(t, baseSeed+4e6, i)
		ms := randomMembers(r, 10, i%2 == 1)
		p := Params{Shards: 1 + r.IntN(200), MaxMovesInFlight: -1}
		cur := randomTable(r, p.Shards, ms)
		all, allMoves, _ := Plan(ms, cur, p)
		p.MaxMovesInFlight = 1 + r.IntN(5)
		var got []Move
		for {
			next, moves, _ := Plan(ms, cur, p)
			if len(moves) == 0 {
				break
			}
			got, cur = append(got, moves...), next
		}
		if !slices.Equal(cur, all) || len(got) != len(allMoves) {
			t.Fatalf("seed %d: limited run made %d moves, unlimited %d", seed, len(got), len(allMoves))
		}
	}
}

func randRange(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

// TestPlannerReuse checks that one Planner used for a sequence of unrelated
// calls (tables and member sets growing and shrinking, errors in between)
// returns what a fresh Plan call returns every time: nothing of an earlier
// call leaks into a later one.
func TestPlannerReuse(t *testing.T) {
	t.Parallel()
	var pl Planner
	for i := range 1000 {
		r, seed := seeded(t, baseSeed+7e6, i)
		ms := randomMembers(r, 16, i%2 == 1)
		for j := range ms {
			ms[j].JoinedAt = uint64(r.IntN(20))
		}
		p := Params{Shards: 1 + r.IntN(300), MaxMovesInFlight: r.IntN(20) - 1, Now: 20, JoinStabilization: uint64(r.IntN(10))}
		cur := randomTable(r, p.Shards, ms)
		if i%10 == 9 {
			if _, err := pl.Plan(ms, cur[1:], p); err == nil {
				t.Fatalf("seed %d: a short table was accepted", seed)
			}
		}
		target, want, err := Plan(ms, cur, p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got, err := pl.Plan(ms, cur, p)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("seed %d: the reused planner gave %v (err %v), Plan %v", seed, got, err, want)
		}
		applied := slices.Clone(cur)
		for _, m := range got {
			applied[m.Shard] = m.To
		}
		for s, id := range applied {
			if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == id }) {
				applied[s] = ""
			}
		}
		if !slices.Equal(applied, target) {
			t.Fatalf("seed %d: the target is not the table with the moves applied", seed)
		}
	}
}

// TestPlannerChanged follows random tables through many rounds, as a
// leader would: some of the planned moves complete, owners depart and
// shards are freed, members join and leave, time passes. Each round a
// Planner is told only which shards changed, and it must return exactly
// what a fresh Plan of the whole table returns.
func TestPlannerChanged(t *testing.T) {
	t.Parallel()
	for i := range 200 {
		r, seed := seeded(t, baseSeed+8e6, i)
		ms := randomMembers(r, 12, i%2 == 1)
		p := Params{Shards: 1 + r.IntN(400), MaxMovesInFlight: r.IntN(30) - 1, JoinStabilization: uint64(r.IntN(4))}
		cur := randomTable(r, p.Shards, ms)
		var pl Planner
		var changed []ShardID
		set := func(s int, id string) {
			cur[s] = id
			changed = append(changed, ShardID(s))
		}
		for round := range 30 {
			p.Now = uint64(round)
			_, wantMoves, err := Plan(ms, cur, p)
			if err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			got, err := pl.PlanChanged(ms, cur, changed, p)
			if err != nil || !slices.Equal(got, wantMoves) {
				t.Fatalf("seed %d round %d: PlanChanged gave %v (err %v), Plan %v", seed, round, got, err, wantMoves)
			}
			changed = changed[:0]
			for _, m := range got {
				if r.IntN(3) > 0 {
					set(int(m.Shard), m.To)
				}
			}
			for range r.IntN(4) {
				switch s := r.IntN(p.Shards); r.IntN(3) {
				case 0:
					set(s, "")
				case 1:
					set(s, "gone")
				default:
					changed = append(changed, ShardID(s)) // listed, unchanged
				}
			}
			switch r.IntN(10) {
			case 0:
				ms = append(ms, Member{ID: fmt.Sprintf("j%d", round), JoinedAt: uint64(round)})
			case 1:
				if len(ms) > 1 {
					ms = slices.Delete(slices.Clone(ms), 0, 1)
				}
			case 2:
				if _, err := pl.PlanChanged(ms, cur, []ShardID{ShardID(p.Shards)}, p); err == nil {
					t.Fatalf("seed %d: an out-of-range change was accepted", seed)
				}
			}
		}
	}
}

// TestPlannerDropsALargeMoveList: the moves of a plan that assigns a whole
// table of free shards are not kept for the next call, whose plan moves
// few; a small list's array is reused.
func TestPlannerDropsALargeMoveList(t *testing.T) {
	t.Parallel()
	ms := []Member{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	p := Params{Shards: 3 * keptMoves, MaxMovesInFlight: -1}
	var pl Planner
	moves, err := pl.Plan(ms, make([]string, p.Shards), p)
	if err != nil || len(moves) != p.Shards {
		t.Fatalf("first plan: %d moves, %v; want every shard assigned", len(moves), err)
	}
	table := make([]string, p.Shards)
	for _, m := range moves {
		table[m.Shard] = m.To
	}
	table[0] = "" // one shard freed
	moves, err = pl.Plan(ms, table, p)
	if err != nil || len(moves) != 1 {
		t.Fatalf("second plan: %v, %v; want the freed shard's move", moves, err)
	}
	if c := cap(pl.st.moves); c > keptMoves {
		t.Fatalf("the planner keeps a move array of %d after a plan of 1 move; at most %d", c, keptMoves)
	}
	kept := &pl.st.moves[:1][0]
	table[0] = moves[0].To
	table[1] = ""
	if _, err := pl.Plan(ms, table, p); err != nil {
		t.Fatal(err)
	}
	if &pl.st.moves[:1][0] != kept {
		t.Fatal("a small move array was not reused")
	}
}
