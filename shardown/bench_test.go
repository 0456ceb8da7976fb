package shardown

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// Sizes of the large-join scenario: S shards over n members, then one join.
const (
	largeShards  = 100_000
	largeMembers = 100
)

// largeJoinSetup builds the large-join scenario: it converges a table of
// largeShards shards over largeMembers equal members ("m000".."m099") by
// calling Plan with no rate limit until it returns no moves, then returns
// that table together with the members plus a stable 101st member "m100"
// and the Params to plan the join with (no rate limit).
func largeJoinSetup(tb testing.TB) (members []Member, table []string, p Params) {
	tb.Helper()
	// JoinedAt 0 with a large Now and no stabilization: every member,
	// including the joiner, is eligible at once.
	p = Params{Shards: largeShards, MaxMovesInFlight: -1, Now: 1 << 40, JoinStabilization: 0}
	members = make([]Member, largeMembers, largeMembers+1)
	for i := range members {
		members[i] = Member{ID: fmt.Sprintf("m%03d", i), Weight: 1, JoinedAt: 0}
	}
	table = make([]string, largeShards)
	for call := 0; ; call++ {
		target, moves, err := Plan(members, table, p)
		if err != nil {
			tb.Fatal(err)
		}
		if len(moves) == 0 {
			break
		}
		table = target
		if call > 10 {
			tb.Fatalf("no convergence of the %d-member table after %d unlimited calls", largeMembers, call)
		}
	}
	members = append(members, Member{ID: fmt.Sprintf("m%03d", largeMembers), Weight: 1, JoinedAt: 0})
	return members, table, p
}

// reportJoinMetrics reports the moves of the last planned join as moves/op,
// the fewest shards the joiner must receive, ceil(S/(n+1)), as optimum,
// and their ratio as moves/optimum.
func reportJoinMetrics(b *testing.B, moves int) {
	optimum := ceilDiv(largeShards, largeMembers+1)
	b.ReportMetric(float64(moves), "moves/op")
	b.ReportMetric(float64(optimum), "optimum")
	b.ReportMetric(float64(moves)/float64(optimum), "moves/optimum")
}

// BenchmarkAssign measures one Plan call for 100,000 shards over 100
// balanced members after one member joins: "unlimited" is the whole
// rebalance in a single call; "rate-limited" uses the default limit
// (max(1, S/16) moves per call), the first call a caller makes after the
// join. Building the balanced table is not timed.
func BenchmarkAssign(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int
	}{{"unlimited", -1}, {"rate-limited", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			members, table, p := largeJoinSetup(b)
			p.MaxMovesInFlight = bc.limit
			moves := 0
			for b.Loop() {
				_, mv, err := Plan(members, table, p)
				if err != nil {
					b.Fatal(err)
				}
				moves = len(mv)
			}
			reportJoinMetrics(b, moves)
		})
	}
}

// TestAssignLargeJoinMoves checks the BenchmarkAssign scenario: a join to
// 100 balanced members holding 100,000 shards moves at most
// 1.1·ceil(S/(n+1)) shards, all of them to the joiner, and leaves every
// member within its bounds in a single unlimited call.
func TestAssignLargeJoinMoves(t *testing.T) {
	members, table, p := largeJoinSetup(t)
	checkBalanced(t, members[:largeMembers], table, p)

	target, moves, err := Plan(members, table, p)
	if err != nil {
		t.Fatal(err)
	}
	checkStep(t, members, table, target, moves, p)

	joiner := members[largeMembers].ID
	optimum := ceilDiv(largeShards, largeMembers+1)
	limit := 1.1 * float64(optimum)
	t.Logf("S=%d n=%d->%d: %d moves, optimum ceil(S/(n+1))=%d, ratio %.3f, limit %.1f",
		largeShards, largeMembers, largeMembers+1, len(moves), optimum,
		float64(len(moves))/float64(optimum), limit)
	if float64(len(moves)) > limit {
		t.Errorf("join moved %d shards, limit 1.1·%d = %.1f", len(moves), optimum, limit)
	}
	for _, mv := range moves {
		if mv.To != joiner {
			t.Fatalf("move %+v does not go to the joiner %s", mv, joiner)
		}
	}

	// Balanced: no member above ceil(S/(n+1)·(1+ε)), and every member
	// within its documented [lower, upper] bounds.
	upper := int(math.Ceil(float64(largeShards)/float64(largeMembers+1)*(1+DefaultEpsilon) - 1e-9))
	l := loads(target)
	for _, m := range members {
		if l[m.ID] > upper {
			t.Errorf("member %s holds %d shards, more than %d", m.ID, l[m.ID], upper)
		}
	}
	checkBalanced(t, members, target, p)
	if l[joiner] != len(moves) {
		t.Errorf("joiner holds %d shards after %d moves", l[joiner], len(moves))
	}

	// One unlimited call converges: planning again moves nothing.
	if _, again, err := Plan(members, target, p); err != nil || len(again) != 0 {
		t.Fatalf("second call after the join: %d moves, err %v; want none", len(again), err)
	}
}

// balancedSetup converges a table of shards shards over n equal members
// ("m000"...) with unlimited calls and returns the members, the table and
// the Params used (every member eligible at once).
func balancedSetup(tb testing.TB, shards, n int) (members []Member, table []string, p Params) {
	tb.Helper()
	p = Params{Shards: shards, MaxMovesInFlight: -1, Now: 1 << 40}
	members = make([]Member, n, n+1)
	for i := range members {
		members[i] = Member{ID: fmt.Sprintf("m%03d", i), Weight: 1}
	}
	table = make([]string, shards)
	for call := 0; ; call++ {
		target, moves, err := Plan(members, table, p)
		if err != nil {
			tb.Fatal(err)
		}
		if len(moves) == 0 {
			return members, table, p
		}
		table = target
		if call > 10 {
			tb.Fatalf("no convergence of the %d-member table after %d calls", n, call)
		}
	}
}

// BenchmarkPlan measures one Plan call on 100,000 shards over 3 and 64
// members, as the leader's balancer makes them: "steady" on a balanced
// table (nothing to do, the call made on every change of the table),
// "bootstrap" from an empty table, and "join" after one member joins,
// whole ("unlimited") and with the default rate limit.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{3, 64} {
		members, table, p := balancedSetup(b, largeShards, n)
		joined := append(members, Member{ID: fmt.Sprintf("m%03d", n), Weight: 1})
		limited := p
		limited.MaxMovesInFlight = 0
		for _, bc := range []struct {
			name    string
			members []Member
			table   []string
			p       Params
		}{
			{"steady", members, table, p},
			{"bootstrap", members, make([]string, largeShards), p},
			{"join-unlimited", joined, table, p},
			{"join-limited", joined, table, limited},
		} {
			b.Run(fmt.Sprintf("members=%d/%s", n, bc.name), func(b *testing.B) {
				b.ReportAllocs()
				moves := 0
				for b.Loop() {
					_, mv, err := Plan(bc.members, bc.table, bc.p)
					if err != nil {
						b.Fatal(err)
					}
					moves = len(mv)
				}
				b.ReportMetric(float64(moves), "moves/op")
			})
		}
	}
}

// BenchmarkPlanner measures the calls of BenchmarkPlan on a reused Planner,
// as a leader planning on every change would make them.
func BenchmarkPlanner(b *testing.B) {
	for _, n := range []int{3, 64} {
		members, table, p := balancedSetup(b, largeShards, n)
		joined := append(members, Member{ID: fmt.Sprintf("m%03d", n), Weight: 1})
		for _, bc := range []struct {
			name    string
			members []Member
		}{{"steady", members}, {"join-unlimited", joined}} {
			b.Run(fmt.Sprintf("members=%d/%s", n, bc.name), func(b *testing.B) {
				var pl Planner
				b.ReportAllocs()
				moves := 0
				for b.Loop() {
					mv, err := pl.Plan(bc.members, table, p)
					if err != nil {
						b.Fatal(err)
					}
					moves = len(mv)
				}
				b.ReportMetric(float64(moves), "moves/op")
			})
		}
	}
}

// BenchmarkPlanChanged measures a reused Planner told which shards
// changed since its last call, on 100,000 shards: "steady" after one
// shard changed owner and back (nothing to move), "join" planning a join
// after one shard changed.
func BenchmarkPlanChanged(b *testing.B) {
	for _, n := range []int{3, 64} {
		members, table, p := balancedSetup(b, largeShards, n)
		joined := append(members, Member{ID: fmt.Sprintf("m%03d", n), Weight: 1})
		for _, bc := range []struct {
			name    string
			members []Member
		}{{"steady", members}, {"join-unlimited", joined}} {
			b.Run(fmt.Sprintf("members=%d/%s", n, bc.name), func(b *testing.B) {
				var pl Planner
				if _, err := pl.Plan(bc.members, table, p); err != nil {
					b.Fatal(err)
				}
				changed := []ShardID{17}
				b.ReportAllocs()
				moves := 0
				for b.Loop() {
					mv, err := pl.PlanChanged(bc.members, table, changed, p)
					if err != nil {
						b.Fatal(err)
					}
					moves = len(mv)
				}
				b.ReportMetric(float64(moves), "moves/op")
			})
		}
	}
}

// BenchmarkPlannerRules measures a reused Planner on 100,000 shards over
// 64 members, half of them tagged "ssd", under a rule giving the first
// half of the shards to those: "rule-set" plans the first round after the
// rule appears on a table balanced without it (the moves it starts), and
// "steady" plans the table the rule's rounds converged to (nothing to
// do, with PlanChanged after one shard changed).
func BenchmarkPlannerRules(b *testing.B) {
	members, table, p := balancedSetup(b, largeShards, 64)
	for i := range members {
		if i%2 == 0 {
			members[i].Tags = []string{"ssd"}
		}
	}
	p.Rules = []Rule{{First: 0, Last: largeShards/2 - 1, Require: []string{"ssd"}}}
	b.Run("members=64/rule-set", func(b *testing.B) {
		var pl Planner
		b.ReportAllocs()
		moves := 0
		for b.Loop() {
			mv, err := pl.Plan(members, table, p)
			if err != nil {
				b.Fatal(err)
			}
			moves = len(mv)
		}
		b.ReportMetric(float64(moves), "moves/op")
	})
	ruled := slices.Clone(table)
	unlimited := p
	unlimited.MaxMovesInFlight = -1
	for call := 0; ; call++ {
		target, mv, err := Plan(members, ruled, unlimited)
		if err != nil || call > 20 {
			b.Fatalf("no convergence under the rule: %v", err)
		}
		ruled = target
		if len(mv) == 0 {
			break
		}
	}
	b.Run("members=64/steady", func(b *testing.B) {
		var pl Planner
		if _, err := pl.Plan(members, ruled, p); err != nil {
			b.Fatal(err)
		}
		changed := []ShardID{17}
		b.ReportAllocs()
		moves := 0
		for b.Loop() {
			mv, err := pl.PlanChanged(members, ruled, changed, p)
			if err != nil {
				b.Fatal(err)
			}
			moves = len(mv)
		}
		b.ReportMetric(float64(moves), "moves/op")
	})
}
