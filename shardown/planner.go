package shardown

import "fmt"

// Planner plans exactly as Plan does, keeping its working buffers (about
// 5 bytes per shard) from one call to the next, so that a caller planning
// again and again, as a leader does on every change of its table,
// allocates nothing per shard. It returns the moves only: the target table
// is current with the moves applied. The zero Planner is ready to use; a
// Planner must not be used by two goroutines at once.
type Planner struct {
	st state
	// ready says st.base holds the table of the last call, for
	// PlanChanged.
	ready bool
}

// Plan returns the moves Plan(members, current, p) returns, or its error.
// The returned slice is the Planner's own and is overwritten by the next
// call.
func (pl *Planner) Plan(members []Member, current []string, p Params) ([]Move, error) {
	pl.ready = false
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(current) != p.Shards {
		return nil, fmt.Errorf("%w: len(current) is %d, want Params.Shards = %d", ErrInvalid, len(current), p.Shards)
	}
	ms, err := normalize(members)
	if err != nil {
		return nil, err
	}
	pl.st.reset(ms, current, p)
	pl.ready = true
	return pl.st.run(p), nil
}

// PlanChanged returns what Plan(members, current, p) returns, reading only
// the shards listed in changed: the caller promises that current differs
// from the table of this Planner's previous call (Plan or PlanChanged)
// at most at those shards. A list may hold a shard that did not change,
// or one twice. When the previous call failed or there was none, the
// shard count changed, or the member IDs, their tags or the rules changed, it reads the whole
// table as Plan does. Otherwise a call costs O(len(changed)) lookups and
// a copy of a member index per shard, plus the moves: it is how a caller
// that learns which shards changed (see fsm.View.ShardChanges) keeps
// planning cheap on a large table. A wrong list gives a plan for the
// wrong table.
func (pl *Planner) PlanChanged(members []Member, current []string, changed []ShardID, p Params) ([]Move, error) {
	p, err := p.withDefaults()
	if err != nil {
		pl.ready = false
		return nil, err
	}
	ms, err := normalize(members)
	if err != nil || len(current) != p.Shards || !pl.ready || len(pl.st.base) != p.Shards || !sameIDs(ms, pl.st.ids) || !pl.st.rl.same(ms, p.Rules) {
		return pl.Plan(members, current, p)
	}
	for _, s := range changed {
		if int(s) >= len(current) {
			pl.ready = false
			return nil, fmt.Errorf("%w: changed shard %d out of range [0, %d)", ErrInvalid, s, len(current))
		}
	}
	st := &pl.st
	st.setMembers(ms, p)
	for _, s := range changed {
		old, now := st.base[s], st.refused(int(s), st.lookup(current[s]))
		if old == now {
			continue
		}
		if old >= 0 {
			st.baseLoad[old]--
		}
		if now >= 0 {
			st.baseLoad[now]++
		}
		st.base[s] = now
	}
	st.derive(p)
	return st.run(p), nil
}

// sameIDs reports whether ms (sorted) has exactly the IDs ids.
func sameIDs(ms []Member, ids []string) bool {
	if len(ms) != len(ids) {
		return false
	}
	for i := range ms {
		if ms[i].ID != ids[i] {
			return false
		}
	}
	return true
}

// run plans steps from the derived state until no step applies or the
// rate limit is reached, and returns the moves.
func (st *state) run(p Params) []Move {
	if st.ls.loadMode(p) {
		return st.runLoad(p)
	}
	st.pinStep(p)
	limit := p.MaxMovesInFlight
	for limit < 0 || len(st.moves) < limit {
		if !st.step() {
			break
		}
	}
	return st.moves
}
