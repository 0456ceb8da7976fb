package shards

import (
	"context"
	"sort"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// Balancer is the leader's side of shard ownership. It plans with a
// shardown.Planner (exactly as shardown.Plan) over the live, undrained sessions and drives every handoff:
// it grants free shards, revokes shards that should move (at most
// MaxMoves rebalancing handoffs in flight), and forces free a revoked
// shard whose owner did not release it a full TTL after the revoke (plus
// the expiry grace for revokes it inherited from an earlier leader), when
// the owner's belief has ended by its own timer (lease rule 5 in
// docs/ARCHITECTURE.md). A Balancer serves one leader term: make a new one
// each time this node becomes leader.
type Balancer struct {
	o         BalancerOptions
	planner   shardown.Planner // plans as shardown.Plan does, reusing its buffers
	table     table            // the table as of the last round, updated from its changes
	activated time.Time
	epoch     time.Time            // origin of the planner's logical clock
	firstSeen map[string]time.Time // session → when this leader first saw it
	// The earliest and latest firstSeen of the last round's members (see
	// awaitFormation).
	oldest, newest time.Time
	inherited      map[string]bool // sessions of the term's first round (see awaitInherited)
	revokes        map[ShardID]revokeTrack
	// Metrics: when each handoff began (revoke seen), and the integral of
	// unowned shards over time.
	handoffStart map[ShardID]time.Time
	unowned      int
	unownedAt    time.Time
	// Balance by load (balancer_load.go): the loads of the round, and the
	// planner's moves of the round (its own slice, valid until the next).
	loads []float64
	moves []shardown.Move
	prep  preparer // planned moves' prepares (prepare.go)
	// The round's shards that no eligible member may own (and whether one
	// not eligible yet would take them), and its revokes for that reason.
	unplaceable []shardown.ShardID
	waiting     []bool
	ruleRevokes map[uint32]bool
	// The planner's table with the moves under prepare on their targets
	// (prepare_overlay.go), and whether the last round used one.
	overlay  []string
	overlaid bool
}

type revokeTrack struct {
	owner    string
	token    uint64
	deadline time.Time // the forced release may be committed from then on
}

// NewBalancer returns the balancer of a leader term that begins now.
func NewBalancer(o BalancerOptions) *Balancer {
	o = o.withDefaults()
	now := o.Now()
	b := &Balancer{o: o, activated: now, epoch: now.Add(-o.JoinStabilization - time.Second),
		firstSeen: map[string]time.Time{}, inherited: map[string]bool{}, revokes: map[ShardID]revokeTrack{}, handoffStart: map[ShardID]time.Time{},
		unownedAt: now}
	b.prep.init()
	return b
}

// Run plans and drives handoffs while this node leads, until ctx ends:
// after every change of the replica and every session heard from for the
// first time (coalesced over RebalanceDelay), every ReconcileInterval, and
// when a join stabilization or a forced release falls due. It blocks; the caller runs it in a goroutine it joins.
func (b *Balancer) Run(ctx context.Context) {
	defer b.stopPrepares()
	first := true
	for {
		v := b.o.View()
		heard := b.o.HeardChanged()
		wake := b.Round(ctx, v, b.o.Now(), first)
		first = false
		timer := time.NewTimer(max(wake.Sub(b.o.Now()), time.Millisecond))
		prepared := false
		switch b.wait(ctx, v, heard, timer) {
		case waitEnd:
			timer.Stop()
			return
		case waitPrepared:
			prepared = true
		case waitTimer:
			continue
		}
		timer.Stop()
		if prepared || b.grantDue(b.o.View()) {
			continue // a target is ready, or a prepared move's shard was released: act at once
		}
		if !b.pause(ctx) {
			return
		}
	}
}

// Round runs one planning round on v at now and returns when the next one
// is due at the latest; first says whether it is the term's first round
// (sessions already in the table count as stable, and inherited revokes
// get the expiry grace). Run calls it; tests call it with chosen instants.
func (b *Balancer) Round(ctx context.Context, v *fsm.View, now time.Time, first bool) time.Time {
	wake := now.Add(b.o.ReconcileInterval)
	if v.ShardCount() == 0 {
		return wake
	}
	b.table.update(v)
	b.integrateUnowned(now)
	members, drained, wakeJoin := b.members(v, now, first)
	if !wakeJoin.IsZero() && wakeJoin.Before(wake) {
		wake = wakeJoin
	}
	if d := b.trackRevokes(v, now, first); !d.IsZero() && d.Before(wake) {
		wake = d
	}
	b.force(ctx, v, now)
	if until, ok := b.awaitInherited(members, now); ok {
		if until.Before(wake) {
			wake = until
		}
		return wake // plan once their first keepalives are in (HeardChanged wakes Run)
	}
	if until, ok := b.awaitFormation(v, now); ok {
		if until.Before(wake) {
			wake = until
		}
		return wake // the membership of a table nobody owns yet is still growing
	}
	b.formationWave(members, now)
	grants, revokes := b.plan(v, members, drained, now)
	planned := plannedMoves(b.moves)            // the round's moves by shard, for the report and the prepares
	b.publish(v, now, grants, revokes, planned) // what the planner chose (as Preview shows it)
	b.clearMoves(ctx, v)
	grants, revokes, retry := b.prepareRound(ctx, v, members, grants, revokes, planned, now)
	if !retry.IsZero() && retry.Before(wake) {
		wake = retry
	}
	if len(grants) > 0 {
		b.commit(ctx, fsm.OpShardGrant, grants)
	}
	if len(revokes) > 0 {
		b.commit(ctx, fsm.OpShardRevoke, revokes)
	}
	return wake
}

// members returns the sessions that may own shards (live, undrained, not
// being expired) as planner members, whether any session is drained, and
// when the next member becomes stable. A session this leader has not heard
// a keepalive from is held: it keeps its shards but receives none.
func (b *Balancer) members(v *fsm.View, now time.Time, first bool) (map[string]shardown.Member, bool, time.Time) {
	stab := b.o.JoinStabilization
	out := map[string]shardown.Member{}
	var next time.Time
	seen := map[string]bool{}
	drained := false
	for _, s := range v.Sessions() {
		seen[s.ID] = true
		drained = drained || s.Drained
		t, ok := b.firstSeen[s.ID]
		if !ok {
			t = now
			if first {
				t = now.Add(-stab) // sessions a previous leader knew count as stable
				b.inherited[s.ID] = true
			}
			b.firstSeen[s.ID] = t
		}
		if s.Drained || b.o.Expiring(s.ID, now) {
			continue
		}
		if ready := t.Add(stab); ready.After(now) && (next.IsZero() || ready.Before(next)) {
			next = ready
		}
		out[s.ID] = shardown.Member{ID: s.ID, Weight: s.Weight, Tags: s.Tags, JoinedAt: uint64(t.Sub(b.epoch)), Hold: !b.o.Heard(s.ID)}
	}
	for id := range b.firstSeen {
		if !seen[id] {
			delete(b.firstSeen, id)
		}
	}
	b.noteJoins(out)
	return out, drained, next
}

// trackRevokes records when each revoke was first seen and returns the
// earliest forced-release deadline. It visits the shards changed since the
// last round (all of them on the term's first), then the revokes under way.
func (b *Balancer) trackRevokes(v *fsm.View, now time.Time, first bool) time.Time {
	b.table.each(v, func(s fsm.Shard) {
		id := ShardID(s.ID)
		if s.State != fsm.ShardRevoking {
			delete(b.revokes, id)
			return
		}
		if t, ok := b.revokes[id]; ok && t.owner == s.Owner && t.token == s.Token {
			return
		}
		ttl := b.o.SessionTTL
		if sess, ok := v.Session(s.Owner); ok {
			ttl = time.Duration(sess.TTLNanos)
		}
		d := now.Add(ttl)
		if first {
			d = d.Add(b.o.ExpiryGrace) // a previous leader's keepalive answers may run that much later
		}
		b.revokes[id] = revokeTrack{owner: s.Owner, token: s.Token, deadline: d}
		if _, ok := b.handoffStart[id]; !ok {
			b.handoffStart[id] = now
		}
	})
	var next time.Time
	for _, t := range b.revokes {
		if next.IsZero() || t.deadline.Before(next) {
			next = t.deadline
		}
	}
	return next
}

// force commits the forced release of every revoke whose deadline passed.
func (b *Balancer) force(ctx context.Context, v *fsm.View, now time.Time) {
	var items []fsm.ShardItem
	for id, t := range b.revokes {
		if !now.Before(t.deadline) {
			items = append(items, fsm.ShardItem{Shard: uint32(id), Session: t.owner, Token: t.token})
		}
	}
	if len(items) == 0 {
		return
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Shard < items[j].Shard })
	b.o.Log.Warn("forcing the release of revoked shards whose owner did not release them", "shards", len(items))
	b.o.Metrics.forcedFree(b.commitForced(ctx, items))
}

// commitForced commits the forced release of items in commands of at
// most a chunk of items (chunkItems) (one command for thousands of shards would exceed
// fsm.MaxCommandSize); it returns how many took effect.
func (b *Balancer) commitForced(ctx context.Context, items []fsm.ShardItem) int {
	n := 0
	for _, chunk := range chunkItems(items) {
		res, err := b.o.Apply(ctx, fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{Force: true, Items: chunk}})
		if err != nil {
			b.o.Log.Warn("forced shard release failed", "error", err)
			return n
		}
		n += res.Count
	}
	return n
}

// plan runs the planner and turns its moves into grants (free shards) and
// revokes (owned shards), limiting rebalancing handoffs in flight. The
// planner keeps its table between rounds and reads only the shards that
// changed, unless the members changed.
func (b *Balancer) plan(v *fsm.View, members map[string]shardown.Member, drained bool, now time.Time) (grants, revokes []fsm.ShardItem) {
	n := v.ShardCount()
	current, moved, all := b.table.planInput(v, members)
	current, all = b.overlayPrepares(v, current, members, all)
	inflight := 0
	for _, t := range b.revokes {
		if _, ok := members[t.owner]; ok {
			inflight++
		}
	}
	var moves []shardown.Move
	defer func() { b.moves = moves }()
	if len(members) > 0 {
		ms := make([]shardown.Member, 0, len(members))
		for _, m := range members {
			ms = append(ms, m)
		}
		p := b.params(v, members, now)
		var err error
		if all {
			moves, err = b.planner.Plan(ms, current, p)
		} else {
			moves, err = b.planner.PlanChanged(ms, current, moved, p)
		}
		if err != nil {
			b.o.Log.Error("shard planning failed", "error", err)
			b.table.members = nil // the next round plans from scratch
			return nil, nil
		}
	}
	budget := b.o.MaxMoves
	if budget == 0 {
		budget = max(1, n/16)
	}
	budget -= inflight
	revoked := map[uint32]bool{}
	for i := 0; i < len(moves); i++ {
		m := moves[i]
		if m.Pair && i+1 < len(moves) && !b.pairFits(v, members, moves[i:i+2], budget) {
			i++ // an exchange: both halves or neither
			continue
		}
		cur, _ := v.Shard(uint32(m.Shard))
		switch {
		case cur.State == fsm.ShardFree:
			grants = append(grants, fsm.ShardItem{Shard: cur.ID, Session: m.To})
		case cur.State != fsm.ShardOwned || cur.Owner == m.To:
		case members[cur.Owner].ID != "":
			// An operator's pin or rule is not rate-limited; nor is a move
			// whose target is already preparing (its budget was spent then).
			if budget > 0 || m.Reason == shardown.ReasonPin || m.Reason == shardown.ReasonRule || b.preparing(cur.ID, cur.Token, m.To) {
				budget--
				revokes = append(revokes, fsm.ShardItem{Shard: cur.ID, Session: cur.Owner, Token: cur.Token, To: m.To})
				revoked[cur.ID] = true
			}
		case !b.o.Expiring(cur.Owner, now): // drained: not limited
			revokes = append(revokes, fsm.ShardItem{Shard: cur.ID, Session: cur.Owner, Token: cur.Token, To: m.To})
			revoked[cur.ID] = true
		}
	}
	revokes = b.overlaidRevokes(v, moves, revoked, revokes)
	if len(members) > 0 {
		revokes = b.revokeUnplaceable(v, revoked, revokes)
	} else {
		b.unplaceable, b.waiting = b.unplaceable[:0], nil
	}
	// A drained owner gives up its shards even when nobody can take them.
	if !drained {
		return grants, revokes
	}
	v.EachShard(func(s fsm.Shard) bool {
		if s.State == fsm.ShardOwned && !revoked[s.ID] {
			if sess, ok := v.Session(s.Owner); ok && sess.Drained {
				revokes = append(revokes, fsm.ShardItem{Shard: s.ID, Session: s.Owner, Token: s.Token})
			}
		}
		return true
	})
	return grants, revokes
}

// commit commits items in chunks; a failure is logged and the next round
// replans.
func (b *Balancer) commit(ctx context.Context, op fsm.Op, items []fsm.ShardItem) {
	for _, chunk := range chunkItems(items) {
		res, err := b.o.Apply(ctx, fsm.Command{Op: op, Shard: &fsm.ShardCmd{Items: chunk}})
		if err != nil {
			if ctx.Err() == nil {
				b.o.Log.Warn("shard command failed; replanning", "op", op.String(), "error", err)
			}
			return
		}
		if op == fsm.OpShardGrant {
			b.observeHandoffs(chunk, res.Index)
		} else {
			b.o.Metrics.handedOff(res.Count)
			b.startHandoffs(chunk, res.Index)
		}
		b.o.Log.Debug("shard command committed", "op", op.String(), "items", len(chunk), "applied", res.Count)
	}
}

// startHandoffs notes when each revoke the command at index applied began
// its handoff.
func (b *Balancer) startHandoffs(items []fsm.ShardItem, index uint64) {
	v := b.o.View()
	now := b.o.Now()
	for _, it := range items {
		if sh, ok := v.Shard(it.Shard); ok && sh.Revoked == index {
			if _, ok := b.handoffStart[ShardID(it.Shard)]; !ok {
				b.handoffStart[ShardID(it.Shard)] = now
			}
		}
	}
}

// observeHandoffs records the duration of every handoff that the grant
// committed at index completed.
func (b *Balancer) observeHandoffs(items []fsm.ShardItem, index uint64) {
	v := b.o.View()
	now := b.o.Now()
	for _, it := range items {
		id := ShardID(it.Shard)
		start, ok := b.handoffStart[id]
		if sh, found := v.Shard(it.Shard); !ok || !found || sh.Owner != it.Session || sh.Granted != index {
			continue
		}
		b.o.Metrics.handoffTook(now.Sub(start))
		delete(b.handoffStart, id)
	}
}

// integrateUnowned adds the shard-seconds spent unowned since the last
// round (at the count seen then) and takes the new count.
func (b *Balancer) integrateUnowned(now time.Time) {
	b.o.Metrics.unowned(float64(b.unowned) * now.Sub(b.unownedAt).Seconds())
	b.unowned, b.unownedAt = b.table.free, now
}
