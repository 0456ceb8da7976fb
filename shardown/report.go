package shardown

// MemberBalance is one member's place in a plan: what it carries, what it
// should carry, and what it carries once the plan's moves are done.
type MemberBalance struct {
	// ID is the member's ID.
	ID string
	// Capacity is the member's weight (Member.Weight, 0 read as 1).
	Capacity float64
	// Shards is how many shards it holds before the moves, and Planned
	// how many after them.
	Shards, Planned int
	// Load is its load before the moves, PlannedLoad after them, and
	// Target the load the planner aims it at, all in the unit of
	// Params.Load. When the plan is by count they are in shards: Load is
	// Shards and Target is the member's fair share S·w/W.
	Load, PlannedLoad, Target float64
	// Eligible says whether it may receive shards this call; InPool
	// whether it counts for the shares (eligible or holding shards).
	Eligible, InPool bool
	// Stuck says that one shard it holds is by itself more than
	// Params.LoadRatio times its share: its target is that shard's load
	// and the other members share the rest.
	Stuck bool
}

// Balance describes the members as the Planner's last successful call saw
// and left them, in ID order, appended to dst; byLoad says whether that
// call planned by load. It is how a caller shows what the planner would do
// and why (current and target load per member). After a failed call, or
// before any, it returns dst unchanged.
func (pl *Planner) Balance(dst []MemberBalance) (out []MemberBalance, byLoad bool) {
	if !pl.ready {
		return dst, false
	}
	st := &pl.st
	total := 0.0
	for i := range st.ids {
		if st.inPool[i] {
			total += st.weight[i]
		}
	}
	for i, id := range st.ids {
		mb := MemberBalance{ID: id, Capacity: st.weight[i], Shards: st.baseLoad[i], Planned: st.load[i],
			Eligible: st.eligible[i], InPool: st.inPool[i]}
		switch {
		case st.ls.on && len(st.ls.target) == len(st.ids):
			mb.Load, mb.PlannedLoad, mb.Target, mb.Stuck = st.ls.before[i], st.ls.member[i], st.ls.target[i], st.ls.stuck[i]
		default:
			mb.Load, mb.PlannedLoad = float64(mb.Shards), float64(mb.Planned)
			if st.inPool[i] && total > 0 {
				mb.Target = float64(len(st.owner)) * st.weight[i] / total
			}
		}
		dst = append(dst, mb)
	}
	return dst, st.ls.on
}
