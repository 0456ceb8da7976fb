package shardown

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// convergeRules plans until no move is left, checking every call: at most
// the rate limit, each move from the shard's current owner to a live
// member the rules allow, never a shard twice. It returns the table with
// the moves applied (owners the rules refuse kept: the planner does not
// revoke) and the number of calls.
func convergeRules(t *testing.T, ms []Member, cur []string, p Params) ([]string, int) {
	t.Helper()
	live := map[string]Member{}
	for _, m := range ms {
		live[m.ID] = m
	}
	var pl Planner
	for call := 1; ; call++ {
		moves, err := pl.Plan(ms, cur, p)
		if err != nil {
			t.Fatal(err)
		}
		if k := p.MaxMovesInFlight; k > 0 && len(moves) > k {
			t.Fatalf("%d moves, limit %d", len(moves), k)
		}
		next := slices.Clone(cur)
		seen := map[ShardID]bool{}
		for _, mv := range moves {
			m, ok := live[mv.To]
			from := cur[mv.Shard]
			if _, alive := live[from]; !alive {
				from = ""
			}
			if seen[mv.Shard] || !ok || mv.From != from || !Allows(p.Rules, mv.Shard, m.Tags, m.Zone) {
				t.Fatalf("call %d: bad move %+v (owner %q)", call, mv, cur[mv.Shard])
			}
			seen[mv.Shard] = true
			next[mv.Shard] = mv.To
		}
		if len(moves) == 0 {
			return cur, call
		}
		cur = next
		if call > 4*p.Shards+10 {
			t.Fatalf("no convergence after %d calls", call)
		}
	}
}

// checkRuled fails unless every shard is owned by a member its rules
// allow, or unowned exactly when no eligible member passes its rules.
func checkRuled(t *testing.T, ms []Member, table []string, p Params) {
	t.Helper()
	for s, o := range table {
		ok := false
		for _, m := range ms {
			if Allows(p.Rules, ShardID(s), m.Tags, m.Zone) && !m.Hold {
				ok = true
			}
		}
		var owner *Member
		for i := range ms {
			if ms[i].ID == o {
				owner = &ms[i]
			}
		}
		switch {
		case ok && owner == nil:
			t.Fatalf("shard %d unowned, though a member may own it", s)
		case owner != nil && !Allows(p.Rules, ShardID(s), owner.Tags, owner.Zone) && ok:
			t.Fatalf("shard %d on %s, which its rules refuse", s, o)
		}
	}
}

func TestRulesKeepShardsOnTaggedMembers(t *testing.T) {
	ms := []Member{{ID: "a", Tags: []string{"ssd"}}, {ID: "b", Zone: "eu"}, {ID: "c", Zone: "us"}}
	p := Params{Shards: 30, MaxMovesInFlight: -1, Rules: []Rule{
		{First: 0, Last: 9, Require: []string{"ssd"}},
		{First: 20, Last: 29, Require: []string{ZoneTag("eu")}},
	}}
	table, _ := convergeRules(t, ms, make([]string, 30), p)
	for s, o := range table {
		want := map[bool]string{true: "a"}[s < 10]
		if s >= 20 {
			want = "b"
		}
		if want != "" && o != want {
			t.Fatalf("shard %d on %q, want %q (table %v)", s, o, want, table)
		}
		if o == "" {
			t.Fatalf("shard %d unowned", s)
		}
	}
	// Shards 10-19 are free to balance: c, allowed none of the others,
	// takes about its share of 10 (within the bounds of 9 to 11).
	if n := loads(table)["c"]; n < 9 || n > 11 {
		t.Fatalf("c holds %d shards, want 9 to 11 (table %v)", n, table)
	}
}

func TestRulesMoveARefusedOwnersShards(t *testing.T) {
	ms := []Member{{ID: "a"}, {ID: "b", Tags: []string{"gpu"}}}
	cur := []string{"a", "a", "b", "b"}
	p := Params{Shards: 4, MaxMovesInFlight: -1, Rules: []Rule{{First: 0, Last: 0, Require: []string{"gpu"}}}}
	_, moves, err := Plan(ms, cur, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) == 0 || moves[0] != (Move{Shard: 0, From: "a", To: "b", Reason: ReasonRule}) {
		t.Fatalf("moves %+v, want shard 0 moved from a to b for its rule first", moves)
	}
}

func TestRulesNobodySatisfiesLeavesTheShardUnowned(t *testing.T) {
	ms := []Member{{ID: "a"}, {ID: "b"}, {ID: "c", Tags: []string{"ssd"}, Hold: true}}
	p := Params{Shards: 8, MaxMovesInFlight: -1, Rules: []Rule{
		{First: 2, Last: 3, Require: []string{"nvme"}}, // nobody
		{First: 5, Last: 5, Require: []string{"ssd"}},  // only c, held
	}}
	cur := []string{"", "", "a", "", "", "b", "", ""}
	var pl Planner
	moves, err := pl.Plan(ms, cur, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range moves {
		if m.Shard == 2 || m.Shard == 3 || m.Shard == 5 {
			t.Fatalf("move %+v of a shard no eligible member may own", m)
		}
	}
	un, waiting := pl.Unplaceable(nil)
	if !slices.Equal(un, []ShardID{2, 3, 5}) || !slices.Equal(waiting, []bool{false, false, true}) {
		t.Fatalf("unplaceable %v waiting %v, want [2 3 5] [false false true]", un, waiting)
	}
	target, _, _ := Plan(ms, cur, p)
	if target[2] != "" || target[5] != "" {
		t.Fatalf("target %v keeps shards 2 and 5 on owners their rules refuse", target)
	}
	// Once c is eligible it takes shard 5 from b.
	ms[2].Hold = false
	moves, err = pl.Plan(ms, cur, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(moves, Move{Shard: 5, From: "b", To: "c", Reason: ReasonRule}) {
		t.Fatalf("moves %+v, want shard 5 from b to c", moves)
	}
}

func TestRulesRefuseAPinTheyForbid(t *testing.T) {
	ms := []Member{{ID: "a"}, {ID: "b", Tags: []string{"ssd"}}}
	p := Params{Shards: 2, MaxMovesInFlight: -1, Rules: []Rule{{First: 0, Last: 1, Require: []string{"ssd"}}},
		Pins: []Pin{{Shard: 0, Member: "a"}}}
	target, _, err := Plan(ms, []string{"", ""}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(target, []string{"b", "b"}) {
		t.Fatalf("target %v, want both shards on b: the pin to a breaks the rule", target)
	}
}

func TestRulesInvalid(t *testing.T) {
	for _, r := range []Rule{{First: 3, Last: 2, Require: []string{"x"}}, {First: 0, Last: 8, Require: []string{"x"}},
		{First: 0, Last: 1}, {First: 0, Last: 1, Require: []string{""}}} {
		if _, _, err := Plan(uniform(2), make([]string, 8), Params{Shards: 8, Rules: []Rule{r}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("rule %+v: err %v, want ErrInvalid", r, err)
		}
	}
	if _, _, err := Plan([]Member{{ID: "a", Tags: []string{""}}}, make([]string, 8), Params{Shards: 8}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an empty tag: err %v, want ErrInvalid", err)
	}
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]Rule{
		"0-9:ssd":         {First: 0, Last: 9, Require: []string{"ssd"}},
		"17:zone=eu,gpu":  {First: 17, Last: 17, Require: []string{"zone=eu", "gpu"}},
		"100-200:role=db": {First: 100, Last: 200, Require: []string{"role=db"}},
	} {
		got, err := ParseRule(in)
		if err != nil || got.First != want.First || got.Last != want.Last || !slices.Equal(got.Require, want.Require) {
			t.Fatalf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseRule(RuleString(got)); err != nil || !slices.Equal(again.Require, got.Require) || again.First != got.First {
			t.Fatalf("RuleString(%+v) = %q does not read back", got, RuleString(got))
		}
	}
	for _, in := range []string{"", "ssd", "1-:x", "9-1:x", "1-2:", "1-2:a,,b", "x-2:a"} {
		if _, err := ParseRule(in); !errors.Is(err, ErrInvalid) {
			t.Fatalf("ParseRule(%q): err %v, want ErrInvalid", in, err)
		}
	}
}

// randomRules returns up to 4 rules over s shards, each requiring one or
// two of the tags t0..t2 or a zone.
func randomRules(r *rand.Rand, s int) []Rule {
	tags := []string{"t0", "t1", "t2", ZoneTag("z0"), ZoneTag("z1")}
	var out []Rule
	for range r.IntN(5) {
		a, b := r.IntN(s), r.IntN(s)
		req := []string{tags[r.IntN(len(tags))]}
		if r.IntN(3) == 0 {
			req = append(req, tags[r.IntN(len(tags))])
		}
		out = append(out, Rule{First: ShardID(min(a, b)), Last: ShardID(max(a, b)), Require: req})
	}
	return out
}

// Property: from any table, with any rules and tags, by count or by load,
// planning converges (no move left, so no oscillation when nothing
// changes) to a table where every shard an eligible member may own is
// owned by one its rules allow, every plan moves shards only where the
// rules allow, and PlanChanged plans what Plan does.
func TestPropertyRules(t *testing.T) {
	t.Parallel()
	for i := range 300 {
		r, seed := seeded(t, baseSeed+7000, i)
		ms := randomMembers(r, 6, r.IntN(2) == 0)
		for k := range ms {
			for _, tag := range []string{"t0", "t1", "t2"} {
				if r.IntN(2) == 0 {
					ms[k].Tags = append(ms[k].Tags, tag)
				}
			}
			ms[k].Zone = fmt.Sprintf("z%d", r.IntN(2))
		}
		s := 1 + r.IntN(60)
		p := Params{Shards: s, MaxMovesInFlight: r.IntN(4) - 1, Rules: randomRules(r, s)}
		if r.IntN(2) == 0 {
			p.Load = make([]float64, s)
			for k := range p.Load {
				p.Load[k] = 1 / math.Pow(float64(k+1), 1.1)
			}
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			table, _ := convergeRules(t, ms, randomTable(r, s, ms), p)
			checkRuled(t, ms, table, p)
			samePlans(t, ms, table, p)
		})
	}
}

// samePlans checks that a Planner's PlanChanged, after a Plan of another
// table, plans for table what a fresh Plan does.
func samePlans(t *testing.T, ms []Member, table []string, p Params) {
	t.Helper()
	var a, b Planner
	other := make([]string, len(table))
	if _, err := a.Plan(ms, other, p); err != nil {
		t.Fatal(err)
	}
	changed := make([]ShardID, len(table))
	for s := range changed {
		changed[s] = ShardID(s)
	}
	m1, err1 := a.PlanChanged(ms, table, changed, p)
	m2, err2 := b.Plan(ms, table, p)
	if err1 != nil || err2 != nil || !slices.Equal(m1, m2) {
		t.Fatalf("PlanChanged %v (%v), Plan %v (%v)", m1, err1, m2, err2)
	}
}
