package lifecycle

import (
	"context"
	"errors"
)

// StopOptions are the steps of a graceful stop (Stop): each a func of the
// node's, nil for a step the stop does not take.
type StopOptions struct {
	StepsOptions
	// Commit: the shard handoff and the session's close can commit (gossip
	// shows a quorum of voters alive, or the node leaves for good); without
	// it both are skipped and the session ends on this node only, as in a
	// crash (a leader of a quorum expires it and passes its grants on).
	Commit bool
	// HandOff hands every shard this node owns to other nodes.
	HandOff func(ctx context.Context) error
	// CloseSession ends this node's grants and session loop, and with
	// commit commits the session's close.
	CloseSession func(ctx context.Context, commit bool) error
	// TransferLeadership, if set, hands raft leadership to another voter.
	TransferLeadership func(ctx context.Context)
	// Decommission, if set, takes this node out of the raft configuration
	// for good; else RemoveSelf, if set, takes this non-voter out of it.
	Decommission, RemoveSelf func(ctx context.Context) error
	// LeaveGossip, if set, leaves the gossip pool.
	LeaveGossip func(ctx context.Context) error
}

// Stop runs the steps of a graceful stop in order (Steps: each skipped or
// failed step is logged on a line of its own) and returns the failures.
func Stop(ctx context.Context, o StopOptions) error {
	steps := NewSteps(ctx, o.StepsOptions)
	if o.Commit {
		steps.Committing("handing shards off", o.HandOff, nil)
		steps.Committing("closing the session", func(ctx context.Context) error { return o.CloseSession(ctx, true) },
			func() { _ = o.CloseSession(ctx, false) })
	} else {
		// Nothing could commit: stop as a crash would.
		noQuorum := errors.New("gossip shows no quorum of voters alive")
		steps.Skip("handing shards off", noQuorum)
		_ = o.CloseSession(ctx, false)
		steps.Skip("closing the session", noQuorum)
	}
	if o.TransferLeadership != nil {
		steps.Committing("handing raft leadership over", func(ctx context.Context) error { o.TransferLeadership(ctx); return nil }, nil)
	}
	switch {
	case o.Decommission != nil:
		steps.Committing("leaving the raft configuration (the node stops keeping its place)", o.Decommission, nil)
	case o.RemoveSelf != nil:
		steps.Committing("leaving the raft configuration as a non-voter", o.RemoveSelf, nil)
	}
	if o.LeaveGossip != nil {
		steps.Failed("leaving gossip", o.LeaveGossip(ctx))
	}
	return steps.Done()
}
