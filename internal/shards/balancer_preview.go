package shards

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// PreviewRequest asks a running balancer for the plan of its next round
// (BalancerOptions.Previews); the answer goes to Reply (buffered by the
// asker, or received at once).
type PreviewRequest struct {
	Reply chan<- *PlanReport
}

// What ended a wait between two rounds.
const (
	waitRound    = iota // a change or a newly heard session: plan again after RebalanceDelay
	waitTimer           // the round's wake-up time: plan at once
	waitEnd             // ctx ended
	waitPrepared        // a planned move's target reported ready: act at once
)

// wait blocks between two rounds, answering previews meanwhile.
func (b *Balancer) wait(ctx context.Context, v *fsm.View, heard <-chan struct{}, timer *time.Timer) int {
	for {
		select {
		case <-ctx.Done():
			return waitEnd
		case <-v.Changed():
			return waitRound
		case <-heard:
			return waitRound
		case <-timer.C:
			return waitTimer
		case <-b.prepareWake():
			return waitPrepared
		case req := <-b.o.Previews:
			req.Reply <- b.Preview(b.o.View(), b.o.Now())
		}
	}
}

// Preview returns what a round on v at now would propose, committing
// nothing: the same steps as Round (the table brought up to date, the
// members, the revokes in flight) but no forced release, no command, no
// metric. On the same view, at the same instant and with the same load
// reports, the next Round proposes exactly these moves; nil when the round
// would not plan (no shards, or waiting for the sessions an earlier leader
// knew to be heard from).
func (b *Balancer) Preview(v *fsm.View, now time.Time) *PlanReport {
	if v.ShardCount() == 0 {
		return nil
	}
	b.table.update(v)
	members, drained, _ := b.members(v, now, false)
	b.trackRevokes(v, now, false)
	if _, ok := b.awaitInherited(members, now); ok {
		return nil
	}
	if _, ok := b.awaitFormation(v, now); ok {
		return nil
	}
	b.formationWave(members, now)
	grants, revokes := b.plan(v, members, drained, now)
	return b.report(v, now, grants, revokes, plannedMoves(b.moves), false)
}
