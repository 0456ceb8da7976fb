package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/errline"
)

// LeaveOptions tune Leave.
type LeaveOptions struct {
	// Force takes a voter out even when fewer than Cluster.Voters voters
	// would remain and no node is ready to replace it (the cluster then
	// runs with fewer voters until an eligible node joins and autopilot
	// promotes it). Force never takes out the last voter, nor a voter whose
	// removal the remaining healthy voters could not commit.
	Force bool
}

// Leave decommissions this node: it takes the node out of the raft
// configuration for good, and then stops it as Shutdown does (shards handed
// off, leases and session ended, leadership handed over, gossip left). It
// is what a node that will not come back, or comes back only with an empty
// data dir, should do; a restart needs only Shutdown, which keeps a voter's
// place.
//
// A voter whose removal would leave fewer than Cluster.Voters voters is
// replaced first: the leader promotes a healthy, stable, eligible
// non-voter, and only then removes this node, so the fault tolerance never
// drops. With no such node the leave is refused (an error wrapping
// ErrLeaveRefused that says why) unless opts.Force; the last voter, or a
// voter whose removal the remaining healthy voters could not commit, is
// refused even then. Leave checks with the leader before it changes
// anything: a refused Leave leaves the node running, untouched. If the
// check passes but the removal fails later (leadership lost for good, ctx
// ended), the node still stops, keeping its place, and the error says so;
// run Leave again on a restarted node, or let the dead-voter rules replace
// it.
//
// Leave needs a raft leader and waits for one until ctx ends. It returns
// ErrShutdown when Shutdown, Close or another Leave began first.
func (c *Coordinator) Leave(ctx context.Context, opts LeaveOptions) error {
	if c.closing() {
		return ErrShutdown
	}
	if _, err := c.cluster.Leave(ctx, opts.Force, true); err != nil { // the check: nothing changes yet
		return err
	}
	ran := false
	c.stopOnce.Do(func() {
		ran = true
		c.leaving.Store(true)
		err := c.leave(ctx, &opts)
		c.cancel(ErrShutdown)
		c.stopErr = errors.Join(err, c.closeAll())
		close(c.done)
	})
	if !ran {
		return ErrShutdown
	}
	return c.stopErr
}

// leave performs the graceful steps of Shutdown (decommission nil) and of
// Leave. Shutdown changes the raft configuration only for a non-voter,
// which takes itself out; Leave takes this node out after the shards,
// leases and leadership are handed over. When gossip shows no quorum of
// voters alive (the last nodes of a cluster stopped one by one), Shutdown
// skips the handoffs and the session close, which could not commit; and
// every step that must commit is skipped once no raft leader has been
// known for Config.ShutdownWithoutLeader (see stopSteps). Each skipped or
// failed step is logged on a line of its own.
func (c *Coordinator) leave(ctx context.Context, decommission *LeaveOptions) error {
	var plan cluster.ShutdownSteps
	if c.cluster != nil {
		plan = c.cluster.ShutdownPlan()
	}
	if c.feedReplica() {
		// Outside raft: no configuration to count; a leader heard of
		// through the feed stands for the quorum that keeps it.
		_, plan.Quorum = c.RaftLeader()
	}
	steps := c.newStopSteps(ctx)
	commit := plan.Quorum || decommission != nil
	if commit {
		steps.committing("handing shards off", c.shards.HandOff, nil)
		steps.committing("closing the session", func(ctx context.Context) error { return c.closeSession(ctx, true) },
			func() { _ = c.closeSession(ctx, false) })
	} else {
		// Nothing could commit: stop as a crash would; a leader of a
		// quorum expires the session and passes its grants on.
		noQuorum := errors.New("gossip shows no quorum of voters alive")
		steps.skip("handing shards off", noQuorum)
		_ = c.closeSession(ctx, false)
		steps.skip("closing the session", noQuorum)
	}
	if plan.Transfer {
		steps.committing("handing raft leadership over", func(ctx context.Context) error { c.node.TransferLeadership(ctx); return nil }, nil)
	}
	switch {
	case decommission != nil:
		steps.committing("leaving the raft configuration (the node stops keeping its place)", func(ctx context.Context) error {
			rep, err := c.cluster.Leave(ctx, decommission.Force, false)
			if err == nil {
				c.log.Info("left the raft configuration for good", "replaced_by", c.cluster.NameOf(rep.Promoted), "replacement_id", rep.Promoted)
			}
			return err
		}, nil)
	case plan.RemoveSelf:
		steps.committing("leaving the raft configuration as a non-voter", c.node.RemoveSelf, nil)
	}
	if c.members != nil {
		steps.failed("leaving gossip", c.members.Leave(ctx))
	}
	return steps.done()
}

// DefaultShutdownWithoutLeader is Config.ShutdownWithoutLeader when it is
// zero.
const DefaultShutdownWithoutLeader = 5 * time.Second

// A graceful stop (Shutdown, Leave) runs steps that must commit through
// the raft leader: the shard handoff, the session's close, a non-voter's
// removal, a leave's removal. Without a quorum they cannot, and used to
// wait until the caller's context ended (45 s for the ledger's SIGTERM).
// Now they wait for a leader at most Config.ShutdownWithoutLeader: once no
// leader has been known for that long (counted from when this node lost
// it, so a node that lost its leader long before stops at once), every
// remaining step that needs one is skipped, one log line each, and the node
// stops as a crash would (a leader of a quorum expires its session later
// and passes its grants on).

// errLeaderless is the cause of a stop's commit context once no leader
// has been known for Config.ShutdownWithoutLeader.
type errLeaderless struct{ d time.Duration }

func (e *errLeaderless) Error() string {
	return fmt.Sprintf("no raft leader known for %v (Config.ShutdownWithoutLeader)", e.d)
}

// stopSteps runs the steps of a graceful stop, logging one line for each
// step it skips or that fails, and collects the failures.
type stopSteps struct {
	log    *slog.Logger
	ctx    context.Context // the caller's
	commit context.Context // ends with ctx, or with errLeaderless
	stop   func()
	errs   []error
}

// newStopSteps starts following the raft leader for ctx's steps; done
// must be called.
func (c *Coordinator) newStopSteps(ctx context.Context) *stopSteps {
	d := c.cfg.ShutdownWithoutLeader
	if d <= 0 {
		d = DefaultShutdownWithoutLeader
	}
	commit, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.cancelWhenLeaderless(commit, cancel, d)
	}()
	return &stopSteps{log: c.log, ctx: ctx, commit: commit, stop: func() { cancel(nil); <-done }}
}

// cancelWhenLeaderless cancels ctx with errLeaderless once no raft leader
// has been known for d, or returns when ctx ends.
func (c *Coordinator) cancelWhenLeaderless(ctx context.Context, cancel context.CancelCauseFunc, d time.Duration) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		changed := c.noLeader.Changed()
		var expire <-chan time.Time
		if since, none := c.NoLeaderSince(); none {
			left := d - time.Since(since)
			if left <= 0 {
				cancel(&errLeaderless{d})
				return
			}
			t.Reset(left)
			expire = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-expire:
		}
	}
}

// done stops following the leader and returns the failures, on one line.
func (s *stopSteps) done() error {
	s.stop()
	return errline.Join(s.errs...)
}

// leaderless returns the errLeaderless that ended the commit context, or
// nil.
func (s *stopSteps) leaderless() error {
	var e *errLeaderless
	if errors.As(context.Cause(s.commit), &e) {
		return e
	}
	return nil
}

// skip logs that the step named what is skipped, and why.
func (s *stopSteps) skip(what string, why error) {
	s.log.Info("shutdown: skipped "+what+": "+why.Error(), "step", what)
}

// committing runs f, a step that must commit, under the commit context;
// when no leader is known for long enough (before or during f) the step is
// skipped, and local (if set) runs in its place. A failure is logged and
// kept.
func (s *stopSteps) committing(what string, f func(ctx context.Context) error, local func()) {
	if why := s.leaderless(); why != nil {
		if local != nil {
			local()
		}
		s.skip(what, why)
		return
	}
	err := f(s.commit)
	if why := s.leaderless(); err != nil && why != nil {
		s.skip(what, why)
		return
	}
	s.failed(what, err)
}

// failed logs and keeps err, the failure of the step named what (nil: it
// did not fail).
func (s *stopSteps) failed(what string, err error) {
	if err == nil {
		return
	}
	s.log.Warn("shutdown: "+what+" failed", "step", what, "error", err)
	s.errs = append(s.errs, fmt.Errorf("%s: %w", what, err))
}
