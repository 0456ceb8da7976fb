package shards

import (
	"context"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// Errors are the causes and errors the Manager uses: the caller's public
// error values.
type Errors struct {
	// Lost ends a lease the replica no longer shows this node owning, and
	// a revoked lease at its cap.
	Lost error
	// Revoked ends a lease whose handoff completed.
	Revoked error
	// Shutdown ends every lease at Close; WaitNoShards and SetDrained
	// return it once Stop is closed.
	Shutdown error
	// Abandoned is the cause that ends a prepare whose move does not come.
	Abandoned error
}

// Options is what the Manager needs from its neighbours.
type Options[W any] struct {
	// View returns the replica's current view (required).
	View func() *fsm.View
	// Session returns this node's current session if its belief is valid
	// (else nil), and a channel closed when the session changes (required).
	Session func() (*session.Session, <-chan struct{})
	// Commit commits cmd through raft, retrying while its outcome is
	// unknown, until ctx ends (required).
	Commit func(ctx context.Context, cmd fsm.Command) error
	// IsNoSession reports whether a Commit error says the session is gone
	// (nil: none does).
	IsNoSession func(error) bool
	// Stop is closed when the node begins to shut down: the Manager stops
	// following the replica, and its waits return Errors.Shutdown.
	Stop <-chan struct{}

	// Wrap makes the caller's value for a lease, once, as the lease
	// starts (required).
	Wrap func(*Lease) W
	// Serve is called in a goroutine of its own when a lease starts,
	// with the lease's context; it must return once ctx ends (nil: none,
	// and no goroutine).
	Serve func(ctx context.Context, w W)
	// HandOff is called in a goroutine of its own when the leader revokes
	// a lease; ctx ends after DrainTimeout or when the lease's belief ends
	// (nil: none). When it returns, the lease ends and the release is
	// committed; an error is logged.
	HandOff func(ctx context.Context, w W) error
	// Ended is called once when a lease ends, with its cause, after the
	// Manager forgot it; it must not block or call the Manager (nil: none).
	Ended func(w W, cause error)
	// DrainTimeout bounds HandOff, and the wait for Serve to return
	// before the release is committed.
	DrainTimeout time.Duration
	// Prepare is called in a goroutine of its own when the leader asks
	// this node to prepare a shard that session from owns under token, for
	// a planned move to this node (see Manager.Prepare for its context);
	// it returns when the shard is ready (an error is logged; the move
	// goes on). Nil: none, and every prepare is ready at once.
	Prepare func(ctx context.Context, shard ShardID, from string, token uint64) error
	// PrepareTimeout is the leader's bound on a prepare: HandOff waits
	// that much longer.
	PrepareTimeout time.Duration
	// PrepareHold is how long a prepared shard waits, once the leader
	// stopped waiting for it, for its revoke or grant before the prepare is
	// abandoned.
	PrepareHold time.Duration

	// NodeID is this node's identity: the shards it owns under any
	// session are those whose owner has this node ID.
	NodeID string
	// Addr, Weight and Tags are written into every new session
	// (FillSessionCmd).
	Addr   string
	Weight float64
	Tags   []string
	// SessionTTL bounds HandOff (with DrainTimeout).
	SessionTTL time.Duration

	// Errors are the causes leases end with.
	Errors Errors
	// Log receives the Manager's logs (nil: discarded).
	Log *slog.Logger
	// Metrics observe every lease's acquire wait and read the leases and
	// the replica at scrape time (nil: none).
	Metrics *Metrics
}

func (o Options[W]) withDefaults() Options[W] {
	if o.IsNoSession == nil {
		o.IsNoSession = func(error) bool { return false }
	}
	if o.HandOff == nil {
		o.HandOff = func(context.Context, W) error { return nil }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Errors.Abandoned == nil {
		o.Errors.Abandoned = ErrAbandoned
	}
	if o.PrepareHold <= 0 {
		o.PrepareHold = 2*o.SessionTTL + o.DrainTimeout
	}
	return o
}
