package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/internal/errline"
)

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
