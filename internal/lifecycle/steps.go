package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/internal/errline"
)

// A graceful stop (Shutdown, Leave) runs steps that must commit through
// the raft leader: the shard handoff, the session's close, a non-voter's
// removal, a leave's removal. Without a quorum they cannot, and used to
// wait until the caller's context ended (45 s for the ledger's SIGTERM).
// Now they wait for a leader at most StepsOptions.Leaderless: once no
// leader has been known for that long (counted from when this node lost
// it, so a node that lost its leader long before stops at once), every
// remaining step that needs one is skipped, one log line each, and the node
// stops as a crash would (a leader of a quorum expires its session later
// and passes its grants on).

// errLeaderless is the cause of a stop's commit context once no leader
// has been known for StepsOptions.Leaderless.
type errLeaderless struct{ d time.Duration }

func (e *errLeaderless) Error() string {
	return fmt.Sprintf("no raft leader known for %v (Config.ShutdownWithoutLeader)", e.d)
}

// StepsOptions are what Steps need of the node.
type StepsOptions struct {
	// Log is where skipped and failed steps are logged.
	Log *slog.Logger
	// Leaderless is how long the steps that must commit wait without a
	// raft leader before they are skipped.
	Leaderless time.Duration
	// NoLeaderSince reports, while no raft leader is known, since when;
	// NoLeaderChanged returns a channel closed when that changes.
	NoLeaderSince   func() (time.Time, bool)
	NoLeaderChanged func() <-chan struct{}
}

// Steps runs the steps of a graceful stop, logging one line for each step
// it skips or that fails, and collects the failures.
type Steps struct {
	log    *slog.Logger
	commit context.Context // ends with the caller's, or with errLeaderless
	stop   func()
	errs   []error
}

// NewSteps starts following the raft leader for ctx's steps; Done must be
// called.
func NewSteps(ctx context.Context, o StepsOptions) *Steps {
	commit, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cancelWhenLeaderless(commit, cancel, o)
	}()
	return &Steps{log: o.Log, commit: commit, stop: func() { cancel(nil); <-done }}
}

// cancelWhenLeaderless cancels ctx with errLeaderless once no raft leader
// has been known for o.Leaderless, or returns when ctx ends.
func cancelWhenLeaderless(ctx context.Context, cancel context.CancelCauseFunc, o StepsOptions) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		changed := o.NoLeaderChanged()
		var expire <-chan time.Time
		if since, none := o.NoLeaderSince(); none {
			left := o.Leaderless - time.Since(since)
			if left <= 0 {
				cancel(&errLeaderless{o.Leaderless})
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

// Done stops following the leader and returns the failures, on one line.
func (s *Steps) Done() error {
	s.stop()
	return errline.Join(s.errs...)
}

// leaderless returns the errLeaderless that ended the commit context, or
// nil.
func (s *Steps) leaderless() error {
	var e *errLeaderless
	if errors.As(context.Cause(s.commit), &e) {
		return e
	}
	return nil
}

// Skip logs that the step named what is skipped, and why.
func (s *Steps) Skip(what string, why error) {
	s.log.Info("shutdown: skipped "+what+": "+why.Error(), "step", what)
}

// Committing runs f, a step that must commit, under the commit context;
// when no leader is known for long enough (before or during f) the step is
// skipped, and local (if set) runs in its place. A failure is logged and
// kept.
func (s *Steps) Committing(what string, f func(ctx context.Context) error, local func()) {
	if why := s.leaderless(); why != nil {
		if local != nil {
			local()
		}
		s.Skip(what, why)
		return
	}
	err := f(s.commit)
	if why := s.leaderless(); err != nil && why != nil {
		s.Skip(what, why)
		return
	}
	s.Failed(what, err)
}

// Failed logs and keeps err, the failure of the step named what (nil: it
// did not fail).
func (s *Steps) Failed(what string, err error) {
	if err == nil {
		return
	}
	s.log.Warn("shutdown: "+what+" failed", "step", what, "error", err)
	s.errs = append(s.errs, fmt.Errorf("%s: %w", what, err))
}
