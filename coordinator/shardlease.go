package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/internal/shards"
)

// ShardHandler is told about this node's shard leases. Both methods are
// called from goroutines of their own; they may block, but must return
// once their context ends.
type ShardHandler interface {
	// Acquire is called when this node starts owning a shard. ctx is the
	// lease's context: it ends the moment the lease ends (handoff, loss,
	// shutdown). Acquire may return at once or run the shard's work until
	// ctx ends.
	Acquire(ctx context.Context, l *ShardLease)
	// Release is called when the leader asks this node to hand the shard
	// off, while the lease is still held: drain in-flight work, then
	// return. ctx ends after Config.Shards.DrainTimeout or when the lease's
	// belief ends, whichever comes first. When Release returns, the lease
	// ends (cause ErrRevoked) and the release is committed; an error is
	// logged and changes nothing else.
	Release(ctx context.Context, l *ShardLease) error
}

// HandlerFuncs adapts two functions to a ShardHandler; a nil function is a
// no-op.
// It is a ShardPreparer; with PrepareFunc nil its moves are not prepared.
type HandlerFuncs struct {
	AcquireFunc func(ctx context.Context, l *ShardLease)
	ReleaseFunc func(ctx context.Context, l *ShardLease) error
	PrepareFunc func(ctx context.Context, s ShardID, from Holder) error
}

// Prepare calls PrepareFunc, if set.
func (h HandlerFuncs) Prepare(ctx context.Context, s ShardID, from Holder) error {
	if h.PrepareFunc != nil {
		return h.PrepareFunc(ctx, s, from)
	}
	return nil
}

// Acquire calls AcquireFunc, if set.
func (h HandlerFuncs) Acquire(ctx context.Context, l *ShardLease) {
	if h.AcquireFunc != nil {
		h.AcquireFunc(ctx, l)
	}
}

// Release calls ReleaseFunc, if set.
func (h HandlerFuncs) Release(ctx context.Context, l *ShardLease) error {
	if h.ReleaseFunc != nil {
		return h.ReleaseFunc(ctx, l)
	}
	return nil
}

// ShardLease is this node's ownership of one shard. Like a Lease, its
// context ends the moment this node's belief ends: at its session's
// holder-side deadline, when the shard is handed off (ErrRevoked), when
// the replica shows another owner, or on Shutdown. Once the leader revokes
// the shard, keepalives no longer extend it.
type ShardLease struct {
	belief
	l *shards.Lease
}

// Shard returns the shard this lease owns.
func (l *ShardLease) Shard() ShardID { return l.l.Shard() }

// Revoked returns a channel closed once the leader has asked this node to
// hand the shard off; the lease still holds until the handoff ends it.
func (l *ShardLease) Revoked() <-chan struct{} { return l.l.Revoked() }

// wrapShardLease makes the ShardLease of a lease the shard manager started
// (the manager reports its end: shardLeaseEnded).
func (c *Coordinator) wrapShardLease(l *shards.Lease) *ShardLease {
	return &ShardLease{belief: belief{c: c, token: l.Token(), life: l.Belief()}, l: l}
}

// shardLeaseEnded counts a shard lease's end in the metrics.
func (c *Coordinator) shardLeaseEnded(l *ShardLease, cause error) {
	c.metrics.leaseEnded(kindShard, l.life.Start(), cause)
	c.loads.meter.Forget(uint32(l.Shard()))
}
