package shards

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/shardown"
)

// A planned move (a rebalancing revoke, or a drained owner's shard with a
// target) is prepared before it is revoked: the balancer asks the target
// (BalancerOptions.Prepare) to warm the shard up while the old owner keeps
// serving, and commits the revoke only once the target reported ready or
// PrepareTimeout passed. When the release commits, the balancer grants the
// shard to the prepared target at once (no RebalanceDelay), unless the
// target can no longer own shards. A move the plan no longer wants is
// abandoned (BalancerOptions.Abandon). Fencing is unchanged: the prepare
// gives nothing, the grant still follows the committed release.

// prepMove is one planned move's prepare, keyed by shard.
type prepMove struct {
	owner string // the owner's session
	token uint64 // the owner's grant
	to    string // the target's session
	// rebalance says the owner could own shards when the move began (a
	// rebalancing move, not a drained owner's): only those stay the plan's
	// while they prepare (prepare_overlay.go).
	rebalance bool
	// reason is the planner's reason for the move (shardown's Reason*),
	// "" for a drained owner's shard: the rounds that carry the move on
	// report it under this reason.
	reason string
	// partner is the other half's shard when the move is half of an
	// exchange (shardown's Move.Pair, paired true): a prepared half is
	// revoked only with its partner (holdHalves).
	partner uint32
	paired  bool
	state   prepState
	retry   time.Time // when a failed prepare may be asked again
}

type prepState uint8

const (
	prepAsking  prepState = iota // the target was asked and has not answered
	prepReady                    // the target answered (ready, or its wait passed)
	prepFailed                   // the target could not be asked: the move waits for retry
	prepRevoked                  // the revoke was committed: the grant to the target is due
)

// prepResult is the answer of one prepare call.
type prepResult struct {
	to    string
	items []fsm.ShardItem
	err   error
}

// preparer is the balancer's prepares: the moves and the calls under way.
type preparer struct {
	moves map[uint32]*prepMove
	wg    sync.WaitGroup
	mu    sync.Mutex
	done  []prepResult
	wake  chan struct{} // gets a value when done grows
}

func (p *preparer) init() {
	p.moves = map[uint32]*prepMove{}
	p.wake = make(chan struct{}, 1)
}

// enabled reports whether planned moves are prepared.
func (b *Balancer) prepares() bool { return b.o.Prepare != nil }

// preparing reports whether a prepare of the move of shard id from token
// to to is under way or done: plan keeps such a move even over its budget,
// which it was within when the prepare began.
func (b *Balancer) preparing(id uint32, token uint64, to string) bool {
	pm := b.prep.moves[id]
	return pm != nil && pm.token == token && pm.to == to && pm.state != prepRevoked
}

// prepareRound holds back the planned revokes whose target has not
// prepared yet (asking the targets not asked yet), abandons the prepares
// the plan no longer wants, and grants the released shards of prepared
// moves to their targets; planned (plannedMoves of the round's moves, as
// the report read them) gives a new prepare its reason and partner. It
// returns the grants and revokes to commit now, and when the next round is
// due at the latest (zero: no deadline).
func (b *Balancer) prepareRound(ctx context.Context, v *fsm.View, members map[string]shardown.Member,
	grants, revokes []fsm.ShardItem, planned map[uint32]plannedMove, now time.Time) ([]fsm.ShardItem, []fsm.ShardItem, time.Time) {
	if !b.prepares() {
		return grants, revokes, time.Time{}
	}
	b.collectPrepares()
	grants = b.grantPrepared(v, members, grants)
	wanted := map[uint32]bool{}
	ask := map[string][]fsm.ShardItem{}
	var wake time.Time
	out := revokes[:0]
	for _, r := range revokes {
		if r.To == "" {
			out = append(out, r) // a drained owner's shard nobody can take: nothing to prepare
			continue
		}
		wanted[r.Shard] = true
		pm := b.prep.moves[r.Shard]
		if pm != nil && (pm.owner != r.Session || pm.token != r.Token || pm.to != r.To) {
			b.abandon(ctx, r.Shard, pm)
			pm = nil
		}
		switch {
		case pm == nil:
			_, member := members[r.Session]
			p := planned[r.Shard]
			b.prep.moves[r.Shard] = &prepMove{owner: r.Session, token: r.Token, to: r.To, rebalance: member,
				reason: p.reason, partner: p.partner, paired: p.paired}
			ask[r.To] = append(ask[r.To], r)
		case pm.state == prepReady:
			pm.state = prepRevoked
			out = append(out, r)
		case pm.state == prepFailed && !now.Before(pm.retry):
			pm.state = prepAsking
			ask[r.To] = append(ask[r.To], r)
		case pm.state == prepFailed && (wake.IsZero() || pm.retry.Before(wake)):
			wake = pm.retry
		}
	}
	for id, pm := range b.prep.moves {
		if !wanted[id] && pm.state != prepRevoked {
			b.abandon(ctx, id, pm)
		}
	}
	b.ask(ctx, ask)
	return grants, b.holdHalves(out), wake
}

// plannedMove is the plan's word on one shard's move: its reason, and the
// other half's shard when the move is half of an exchange.
type plannedMove struct {
	reason  string
	partner uint32
	paired  bool
}

// plannedMoves indexes the plan's moves by shard. The planner marks an
// exchange's first half with Pair; the second half is the move after it.
func plannedMoves(moves []shardown.Move) map[uint32]plannedMove {
	out := make(map[uint32]plannedMove, len(moves))
	for i, m := range moves {
		p := plannedMove{reason: m.Reason}
		switch {
		case m.Pair && i+1 < len(moves):
			p.partner, p.paired = uint32(moves[i+1].Shard), true
		case i > 0 && moves[i-1].Pair:
			p.partner, p.paired = uint32(moves[i-1].Shard), true
		}
		out[uint32(m.Shard)] = p
	}
	return out
}

// holdHalves takes out of revokes every prepared half of an exchange whose
// partner is still preparing (asked, or waiting to be asked again), and
// leaves it ready: either half alone would leave the two sessions further
// from their targets, so the two are revoked in the same round, as they
// are without a prepare phase (pairFits). A half whose partner the plan
// dropped, or whose partner was revoked, goes on alone.
func (b *Balancer) holdHalves(revokes []fsm.ShardItem) []fsm.ShardItem {
	out := revokes[:0]
	for _, r := range revokes {
		pm := b.prep.moves[r.Shard]
		if pm != nil && pm.paired && pm.state == prepRevoked {
			q := b.prep.moves[pm.partner]
			if q != nil && q.paired && q.partner == r.Shard && (q.state == prepAsking || q.state == prepFailed) {
				pm.state = prepReady
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// grantPrepared makes the grant of every free shard whose prepared move
// was revoked go to the move's target while it may own shards, and forgets
// the moves that ended (the shard owned by anyone, or the target gone).
func (b *Balancer) grantPrepared(v *fsm.View, members map[string]shardown.Member, grants []fsm.ShardItem) []fsm.ShardItem {
	at := map[uint32]int{}
	for i, g := range grants {
		at[g.Shard] = i
	}
	for id, pm := range b.prep.moves {
		if pm.state != prepRevoked {
			continue
		}
		sh, _ := v.Shard(id)
		switch {
		case sh.State == fsm.ShardRevoking && sh.Owner == pm.owner && sh.Token == pm.token:
			continue // the old owner drains
		case sh.State != fsm.ShardFree || members[pm.to].ID == "" || members[pm.to].Hold:
			delete(b.prep.moves, id) // moved, or the target cannot take it: the plan decides
			continue
		}
		if i, ok := at[id]; ok {
			grants[i].Session = pm.to
		} else {
			grants = append(grants, fsm.ShardItem{Shard: id, Session: pm.to})
		}
	}
	return grants
}

// grantDue reports whether v shows a prepared move's shard released, so
// the round that grants it should not wait for RebalanceDelay.
func (b *Balancer) grantDue(v *fsm.View) bool {
	for id, pm := range b.prep.moves {
		if pm.state == prepRevoked {
			if sh, _ := v.Shard(id); sh.State == fsm.ShardFree {
				return true
			}
		}
	}
	return false
}

// pause waits RebalanceDelay, or less when a prepared move's shard is
// released meanwhile (its grant should not wait); it reports false once
// ctx ended.
func (b *Balancer) pause(ctx context.Context) bool {
	if !b.prepares() || len(b.prep.moves) == 0 {
		return pause.For(ctx, b.o.RebalanceDelay)
	}
	timer := time.NewTimer(b.o.RebalanceDelay)
	defer timer.Stop()
	for {
		v := b.o.View()
		if b.grantDue(v) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-v.Changed():
		}
	}
}

// ask starts one prepare call per target (and chunk), in a goroutine
// stopPrepares joins; the term's end (ctx) cancels it. The answer of a
// move abandoned meanwhile is ignored.
func (b *Balancer) ask(ctx context.Context, ask map[string][]fsm.ShardItem) {
	for to, items := range ask {
		sort.Slice(items, func(i, j int) bool { return items[i].Shard < items[j].Shard })
		for _, chunk := range chunkItems(items) {
			b.prep.wg.Add(1)
			go func() {
				defer b.prep.wg.Done()
				err := b.o.Prepare(ctx, to, chunk, b.o.PrepareTimeout)
				b.prep.mu.Lock()
				b.prep.done = append(b.prep.done, prepResult{to: to, items: chunk, err: err})
				b.prep.mu.Unlock()
				select {
				case b.prep.wake <- struct{}{}:
				default:
				}
			}()
		}
	}
}

// collectPrepares takes the answers in: a move its target answered is
// ready; one whose target could not be asked waits PrepareTimeout before
// it is asked again (its target may be gone: the old owner keeps serving
// until the plan changes).
func (b *Balancer) collectPrepares() {
	b.prep.mu.Lock()
	done := b.prep.done
	b.prep.done = nil
	b.prep.mu.Unlock()
	now := b.o.Now()
	for _, r := range done {
		if r.err != nil {
			b.o.Log.Info("a shard move's target could not prepare; the old owner keeps the shard for now",
				"to", r.to, "shards", len(r.items), "error", r.err)
		}
		for _, it := range r.items {
			pm := b.prep.moves[it.Shard]
			if pm == nil || pm.state != prepAsking || pm.to != r.to || pm.token != it.Token {
				continue
			}
			pm.state = prepReady
			if r.err != nil {
				pm.state, pm.retry = prepFailed, now.Add(b.o.PrepareTimeout)
			}
		}
	}
}

// abandon forgets a prepare the plan no longer wants and tells its target,
// best effort, so that it drops what it loaded.
func (b *Balancer) abandon(ctx context.Context, id uint32, pm *prepMove) {
	delete(b.prep.moves, id)
	if b.o.Abandon == nil || ctx.Err() != nil {
		return
	}
	item := []fsm.ShardItem{{Shard: id, Session: pm.owner, Token: pm.token, To: pm.to}}
	b.prep.wg.Add(1)
	go func() {
		defer b.prep.wg.Done()
		b.o.Abandon(ctx, pm.to, item)
	}()
}

// stopPrepares joins the prepare calls, which the term's end cancelled.
// The targets are not told: a next leader that plans the same moves finds
// them prepared, and a target drops a prepare whose move does not come
// (see Manager.Prepare).
func (b *Balancer) stopPrepares() { b.prep.wg.Wait() }

// prepareWake returns the channel that gets a value when a prepare call
// answered (nil without prepares).
func (b *Balancer) prepareWake() <-chan struct{} {
	if !b.prepares() {
		return nil
	}
	return b.prep.wake
}
