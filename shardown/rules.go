package shardown

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ReasonRule: the shard's owner is not one its placement rules allow, and
// the move takes it to one that is.
const ReasonRule = "rule"

// MaxRules bounds Params.Rules.
const MaxRules = 256

// Rule restricts the owners of a range of shards: only a member carrying
// every tag in Require may own a shard in [First, Last]. A member's tags
// are its Member.Tags and, when it has a Member.Zone z, the tag "zone=z".
// A shard covered by several rules needs the tags of all of them.
//
// Rules are checked on every plan: a shard whose owner no longer passes
// them moves (Reason ReasonRule) to a member that does; a shard no member
// passes is left unowned (Planner.Unplaceable lists them) and never
// granted; a pin to a member the rules refuse has no effect. Balancing
// still aims every member at its share of the whole (count or load) but
// only ever moves a shard to a member its rules allow, so with rules a
// balanced table may be out of reach: the plan then comes as close as the
// allowed moves get it.
type Rule struct {
	// First and Last bound the shards the rule covers, inclusive.
	First, Last ShardID
	// Require lists the tags an owner must carry: at least one, none
	// empty.
	Require []string
}

// ZoneTag is the tag a member of zone z carries: "zone=" + z.
func ZoneTag(z string) string { return "zone=" + z }

// Allows reports whether a member with tags (its Member.Tags, and
// ZoneTag(zone) when zone is not empty) may own shard under rules.
func Allows(rules []Rule, shard ShardID, tags []string, zone string) bool {
	for _, r := range rules {
		if shard < r.First || shard > r.Last {
			continue
		}
		for _, t := range r.Require {
			if !slices.Contains(tags, t) && (zone == "" || t != ZoneTag(zone)) {
				return false
			}
		}
	}
	return true
}

// checkRules validates p.Rules.
func checkRules(p Params) error {
	if len(p.Rules) > MaxRules {
		return fmt.Errorf("%w: %d rules, at most %d", ErrInvalid, len(p.Rules), MaxRules)
	}
	for i, r := range p.Rules {
		if r.First > r.Last || int(r.Last) >= p.Shards || len(r.Require) == 0 || slices.Contains(r.Require, "") {
			return fmt.Errorf("%w: rule %d (shards %d-%d, requiring %q): the range must be within [0, %d) and at least one non-empty tag required",
				ErrInvalid, i, r.First, r.Last, r.Require, p.Shards)
		}
	}
	return nil
}

// ruleState is the part of the working state used when rules apply: the
// shards sorted into classes (the shards covered by the same set of rules
// share one), which members each class allows, and each class's shards in
// order with one scan cursor per member.
type ruleState struct {
	on     bool
	rules  []Rule  // the rules of the last call, to tell when they change
	class  []int32 // each shard's class
	ok     [][]bool
	shards [][]int32
	cursor [][]int  // cursor[c][member]: below it, class c has no unmoved shard of member
	placed []bool   // the class has an eligible member it allows
	any    []bool   // the class has a member it allows (eligible or not)
	tags   []string // each member's tags and zone, to tell when they change
	was    []int32  // each shard's owner when its rules refuse it (else -1)
	// Scratch lists of ruleStep, reused from step to step.
	receivers, donors []int
}

// setRules sorts the shards into classes for p.Rules and decides which of
// the members ms (sorted, as indexed) each class allows.
func (rs *ruleState) setRules(ms []Member, p Params) {
	rs.on = len(p.Rules) > 0
	rs.rules = cloneRules(p.Rules)
	rs.tags = rs.tags[:0]
	for _, m := range ms {
		rs.tags = append(rs.tags, tagKey(m))
	}
	if !rs.on {
		rs.class, rs.ok, rs.shards, rs.cursor = nil, nil, nil, nil
		return
	}
	keys := map[string]int32{}
	rs.class = resize(rs.class, p.Shards)
	rs.ok, rs.shards = rs.ok[:0], rs.shards[:0]
	cuts := []int{0, p.Shards}
	for _, r := range p.Rules {
		cuts = append(cuts, int(r.First), int(r.Last)+1)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var covering []Rule
	for k := 0; k+1 < len(cuts); k++ {
		from, to := cuts[k], cuts[k+1] // the same rules cover every shard of [from, to)
		covering = covering[:0]
		var key strings.Builder
		for i, r := range p.Rules {
			if ShardID(from) >= r.First && ShardID(from) <= r.Last {
				covering = append(covering, r)
				fmt.Fprintf(&key, "%d,", i)
			}
		}
		c, ok := keys[key.String()]
		if !ok {
			c = int32(len(rs.ok))
			keys[key.String()] = c
			allow := make([]bool, len(ms))
			for i, m := range ms {
				allow[i] = Allows(covering, ShardID(from), m.Tags, m.Zone)
			}
			rs.ok = append(rs.ok, allow)
			rs.shards = append(rs.shards, nil)
		}
		for s := from; s < to; s++ {
			rs.class[s] = c
			rs.shards[c] = append(rs.shards[c], int32(s))
		}
	}
}

// derive resets the cursors and decides which classes can be placed, for
// the eligibility of this call.
func (rs *ruleState) derive(eligible []bool) {
	if !rs.on {
		return
	}
	n := len(rs.ok)
	rs.cursor, rs.placed, rs.any = resize(rs.cursor, n), resize(rs.placed, n), resize(rs.any, n)
	for c, allow := range rs.ok {
		rs.cursor[c] = resize(rs.cursor[c], len(eligible))
		for i, a := range allow {
			rs.placed[c] = rs.placed[c] || a && eligible[i]
			rs.any[c] = rs.any[c] || a
		}
	}
}

// allows reports whether member r may own shard s.
func (rs *ruleState) allows(s, r int) bool {
	return !rs.on || rs.ok[rs.class[s]][r]
}

// placeable reports whether some eligible member may own shard s.
func (rs *ruleState) placeable(s int) bool {
	return !rs.on || rs.placed[rs.class[s]]
}

// same reports whether rules and the members' tags are those of the last
// call (a PlanChanged may then keep its classes).
func (rs *ruleState) same(ms []Member, rules []Rule) bool {
	if !slices.EqualFunc(rs.rules, rules, func(a, b Rule) bool {
		return a.First == b.First && a.Last == b.Last && slices.Equal(a.Require, b.Require)
	}) || len(rs.tags) != len(ms) {
		return false
	}
	for i, m := range ms {
		if rs.tags[i] != tagKey(m) {
			return false
		}
	}
	return true
}

// tagKey is m's tags and zone as one string.
func tagKey(m Member) string {
	return strings.Join(m.Tags, "\x00") + "\x01" + m.Zone
}

func cloneRules(rules []Rule) []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = Rule{First: r.First, Last: r.Last, Require: slices.Clone(r.Require)}
	}
	return out
}

// firstUnmovedFor returns the lowest shard of member d that this plan has
// not moved and that r may own, or -1.
func (st *state) firstUnmovedFor(d, r int) int {
	rs := &st.rl
	if !rs.on {
		if st.unmoved[d] == 0 {
			return -1
		}
		return st.firstUnmoved(d)
	}
	best := -1
	for c, allow := range rs.ok {
		if !allow[r] {
			continue
		}
		list := rs.shards[c]
		i := rs.cursor[c][d]
		for i < len(list) && (int(st.owner[list[i]]) != d || st.moved[list[i]]) {
			i++
		}
		rs.cursor[c][d] = i
		if i < len(list) && (best < 0 || int(list[i]) < best) {
			best = int(list[i])
		}
	}
	return best
}

// Unplaceable appends to dst the shards that the last successful call
// (Plan or PlanChanged) could not place because no eligible member passes
// their rules, in shard order, and returns it; whether some member that
// is not eligible yet (joining, held) would pass them is in waiting.
func (pl *Planner) Unplaceable(dst []ShardID) (out []ShardID, waiting []bool) {
	rs := &pl.st.rl
	if !pl.ready || !rs.on {
		return dst, nil
	}
	for s, c := range rs.class {
		if !rs.placed[c] {
			dst = append(dst, ShardID(s))
			waiting = append(waiting, rs.any[c])
		}
	}
	return dst, waiting
}

// RuleString describes a rule as "FIRST-LAST:TAG,TAG" (the form
// ParseRule reads).
func RuleString(r Rule) string {
	return fmt.Sprintf("%d-%d:%s", r.First, r.Last, strings.Join(r.Require, ","))
}

// ParseRule reads a rule written as "FIRST-LAST:TAG[,TAG...]" or
// "SHARD:TAG[,TAG...]".
func ParseRule(s string) (Rule, error) {
	rng, tags, ok := strings.Cut(s, ":")
	if !ok || tags == "" {
		return Rule{}, fmt.Errorf("%w: rule %q: want FIRST-LAST:TAG[,TAG...]", ErrInvalid, s)
	}
	a, b, isRange := strings.Cut(rng, "-")
	if !isRange {
		b = a
	}
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil || first > last {
		return Rule{}, fmt.Errorf("%w: rule %q: the shard range %q is not FIRST-LAST with FIRST <= LAST", ErrInvalid, s, rng)
	}
	r := Rule{First: ShardID(first), Last: ShardID(last), Require: strings.Split(tags, ",")}
	if slices.Contains(r.Require, "") {
		return Rule{}, fmt.Errorf("%w: rule %q: an empty tag", ErrInvalid, s)
	}
	return r, nil
}

// ruleStep is step's rebalancing when rules apply: each receiver below its
// lower bound (least loaded first) takes a shard it may own from the most
// loaded donor above its own lower bound that has one; failing that, each
// donor above its upper bound (most loaded first) gives one to the least
// loaded receiver with room that may own it.
func (st *state) ruleStep() bool {
	rs := &st.rl
	rs.donors = st.ranked(aboveLowerNot, rs.donors)
	rs.receivers = st.ranked(belowLower, rs.receivers)
	if st.movePair(rs.receivers, rs.donors, true) {
		return true
	}
	rs.donors = st.ranked(aboveUpper, rs.donors)
	rs.receivers = st.ranked(withRoom, rs.receivers)
	return st.movePair(rs.donors, rs.receivers, false)
}

// movePair moves one shard between the first pair of distinct members, in
// outer's order and then inner's, where the donor has an unmoved shard the
// receiver may own; outer lists the receivers when outerReceives, else the
// donors.
func (st *state) movePair(outer, inner []int, outerReceives bool) bool {
	for _, a := range outer {
		for _, b := range inner {
			if a == b {
				continue
			}
			r, d := a, b
			if !outerReceives {
				r, d = b, a
			}
			if s := st.firstUnmovedFor(d, r); s >= 0 {
				st.apply(s, r, ReasonCount)
				return true
			}
		}
	}
	return false
}

// ranked returns the pool members of a kind in the order receiver and
// donor prefer them: receivers by (load+1)/weight ascending, donors by
// load/weight descending, ties to the lower ID; in buf's array.
func (st *state) ranked(kind int, buf []int) []int {
	out := buf[:0]
	recv := kind == belowLower || kind == withRoom
	for i := range st.ids {
		switch {
		case !st.inPool[i]:
		case recv && (!st.eligible[i] || kind == belowLower && st.load[i] >= st.lower[i] || kind == withRoom && st.load[i]+1 > st.upper[i]):
		case !recv && (st.unmoved[i] == 0 || kind == aboveLowerNot && st.load[i] <= st.lower[i] || kind == aboveUpper && st.load[i] <= st.upper[i]):
		default:
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int {
		x, y := float64(st.load[a])*st.weight[b], float64(st.load[b])*st.weight[a]
		if recv { // ascending by (load+1)/weight: compare the other way round
			x, y = float64(st.load[b]+1)*st.weight[a], float64(st.load[a]+1)*st.weight[b]
		}
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	return out
}
