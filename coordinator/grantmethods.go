package coordinator

import (
	"context"
	"time"
)

// The methods Lease, Permit and ShardLease share, spelled out on each type
// so that each documents its own (they delegate to the embedded belief).

// Token returns the fencing token of this grant: larger than every token
// granted before it for the same name (or shard), across leader changes and
// restarts. Pass it to every protected resource.
func (l *Lease) Token() uint64 { return l.belief.Token() }

// Done returns a channel closed when the lease ends.
func (l *Lease) Done() <-chan struct{} { return l.belief.Done() }

// Context returns a context cancelled the moment this node stops believing
// it holds the lease; context.Cause says why: ErrReleased (Release), ErrSessionExpired, ErrLeaseLost or ErrShutdown.
func (l *Lease) Context() context.Context { return l.belief.Context() }

// Err returns nil while the lease is held, then why it ended (the causes
// of Context). It reads the clock, so a holder resumed from suspend sees
// the lease ended at once.
func (l *Lease) Err() error { return l.belief.Err() }

// Remaining returns how long this node may still believe it holds the
// lease if no further keepalive is answered (0 once it ended).
func (l *Lease) Remaining() time.Duration { return l.belief.Remaining() }

// Checkpoint returns nil if the lease is held with at least
// Config.Session.LeaseMargin left. Call it before every side effect: it
// fails with an error wrapping ErrReleased ("lease released by this node")
// after this node's Release, ErrLeaseLost once the lease ended otherwise, or with
// an *ExpiringError (ErrLeaseExpiring) saying how much time is left when
// less than the margin is.
func (l *Lease) Checkpoint() error { return l.belief.Checkpoint() }

// Token returns the fencing token of this grant: larger than every token
// granted before it for the same name (or shard), across leader changes and
// restarts. Pass it to every protected resource.
func (p *Permit) Token() uint64 { return p.belief.Token() }

// Done returns a channel closed when the permit ends.
func (p *Permit) Done() <-chan struct{} { return p.belief.Done() }

// Context returns a context cancelled the moment this node stops believing
// it holds the permit; context.Cause says why: ErrReleased (Release), ErrSessionExpired, ErrLeaseLost or ErrShutdown.
func (p *Permit) Context() context.Context { return p.belief.Context() }

// Err returns nil while the permit is held, then why it ended (the causes
// of Context). It reads the clock, so a holder resumed from suspend sees
// the permit ended at once.
func (p *Permit) Err() error { return p.belief.Err() }

// Remaining returns how long this node may still believe it holds the
// permit if no further keepalive is answered (0 once it ended).
func (p *Permit) Remaining() time.Duration { return p.belief.Remaining() }

// Checkpoint returns nil if the permit is held with at least
// Config.Session.LeaseMargin left. Call it before every side effect: it
// fails with an error wrapping ErrReleased ("lease released by this node")
// after this node's Release, ErrLeaseLost once the permit ended otherwise, or with
// an *ExpiringError (ErrLeaseExpiring) saying how much time is left when
// less than the margin is.
func (p *Permit) Checkpoint() error { return p.belief.Checkpoint() }

// Token returns the fencing token of this grant: larger than every token
// granted before it for the same name (or shard), across leader changes and
// restarts. Pass it to every protected resource.
func (l *ShardLease) Token() uint64 { return l.belief.Token() }

// Done returns a channel closed when the shard lease ends.
func (l *ShardLease) Done() <-chan struct{} { return l.belief.Done() }

// Context returns a context cancelled the moment this node stops believing
// it holds the shard lease; context.Cause says why: ErrRevoked (handed off), ErrSessionExpired, ErrLeaseLost or ErrShutdown.
func (l *ShardLease) Context() context.Context { return l.belief.Context() }

// Err returns nil while the shard lease is held, then why it ended (the causes
// of Context). It reads the clock, so a holder resumed from suspend sees
// the shard lease ended at once.
func (l *ShardLease) Err() error { return l.belief.Err() }

// Remaining returns how long this node may still believe it holds the
// shard lease if no further keepalive is answered (0 once it ended).
func (l *ShardLease) Remaining() time.Duration { return l.belief.Remaining() }

// Checkpoint returns nil if the shard lease is held with at least
// Config.Session.LeaseMargin left. Call it before every side effect: it
// fails with an error wrapping ErrLeaseLost once the shard lease ended, or with
// an *ExpiringError (ErrLeaseExpiring) saying how much time is left when
// less than the margin is.
func (l *ShardLease) Checkpoint() error { return l.belief.Checkpoint() }
