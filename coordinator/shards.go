package coordinator

import (
	"context"
	"fmt"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/viewstream"
	"github.com/holdfast-go/holdfast/shardown"
)

// ShardID names a shard: an integer in [0, Shards()).
type ShardID = shardown.ShardID

// Shards returns the cluster's shard count (the configured count before
// this node has learned the cluster's).
func (c *Coordinator) Shards() int {
	if n := c.shardCount.Load(); n > 0 {
		return int(n)
	}
	if n := c.fsm.View().ShardCount(); n > 0 {
		c.shardCount.Store(int64(n)) // fixed for the cluster's life
		return n
	}
	return c.cfg.Shards.Count
}

// ShardFor maps key to its shard with the stable hash of shardown.ShardFor
// over the cluster's shard count: the same on every node and release. It
// does not lock or allocate.
func (c *Coordinator) ShardFor(key []byte) ShardID {
	n := c.shardCount.Load()
	if n == 0 {
		n = int64(c.Shards())
	}
	return shardown.ShardFor(key, int(n))
}

// Owner returns the owner of shard s from the local replica: no network, no
// lock, no allocation. ok is false when the shard is free (between owners)
// or out of range. The replica may lag the leader by a little; the owner's
// token is what fences a stale owner out. For an answer that reflects every
// change committed before a given moment, call Sync then Owner; while this
// node knows no leader (NoLeaderSince), the replica may be stale. The
// owner still owns a shard the leader asked it to hand off (Table's
// ShardInfo.State says ShardRevoking) until the handoff completes.
func (c *Coordinator) Owner(s ShardID) (h Holder, ok bool) {
	o, token, _ := c.fsm.View().ShardOwner(uint32(s))
	if o == nil {
		return h, false
	}
	setHolder(&h, o, token)
	return h, true
}

// ownerIn is Owner on a given view. Owner does not call it: a Holder is
// returned in memory, and the copy between the frames doubled Owner's cost.
func ownerIn(v *fsm.View, s ShardID) (h Holder, ok bool) {
	o, token, _ := v.ShardOwner(uint32(s))
	if o == nil {
		return h, false
	}
	setHolder(&h, o, token)
	return h, true
}

// setHolder fills h with session o's fields and token, field by field: a
// Holder is too large for registers, and a composite literal went through
// two stack temporaries whose 16-byte reloads of 8-byte stores stalled
// store forwarding (half of Owner's time in BenchmarkOwner).
func setHolder(h *Holder, o *fsm.Session, token uint64) {
	h.Node, h.NodeID, h.Addr, h.Session, h.Token = o.Node, o.NodeID, o.Addr, o.ID, token
}

// Owned returns this node's live shard leases, sorted by shard.
func (c *Coordinator) Owned() []*ShardLease { return c.shards.Owned() }

// ShardTable is one version of the shard table, as a replica applied it. It
// is immutable.
type ShardTable struct{ v *fsm.View }

// Version increases with every change of the table: it is the raft index
// of the last command that changed it.
func (t *ShardTable) Version() uint64 { return t.v.ShardsIndex() }

// Len returns the number of shards.
func (t *ShardTable) Len() int { return t.v.ShardCount() }

// Owner returns the owner of shard s in this version (see
// Coordinator.Owner).
func (t *ShardTable) Owner(s ShardID) (Holder, bool) { return ownerIn(t.v, s) }

// Watch delivers the shard table: the current version first, then every
// new version. A slow reader may miss intermediate versions but always
// receives the latest. The channel closes when ctx ends or the node shuts
// down.
func (c *Coordinator) Watch(ctx context.Context) <-chan *ShardTable {
	ch := make(chan *ShardTable, 1)
	if !c.spawn(func() { c.watch(ctx, ch) }) {
		close(ch)
	}
	return ch
}

func (c *Coordinator) watch(ctx context.Context, ch chan *ShardTable) {
	streamViews(ctx, c, ch, func(v *fsm.View) (*ShardTable, uint64, bool) {
		return &ShardTable{v: v}, v.ShardsIndex(), v.ShardCount() > 0
	})
}

// streamViews feeds ch until ctx or the coordinator ends (see
// viewstream.Stream).
func streamViews[T any, K comparable](ctx context.Context, c *Coordinator, ch chan T, next func(*fsm.View) (T, K, bool)) {
	viewstream.Stream(ctx, c.ctx.Done(), c.fsm.View, ch, next)
}

// Drain moves every shard this node owns to other nodes and keeps it from
// receiving new ones, for planned maintenance: the node stays a member (and
// keeps its vote and its leader leases). It returns once this node owns no
// shard, or with ctx's error. The drained state survives session changes
// until Undrain.
func (c *Coordinator) Drain(ctx context.Context) error {
	if c.closing() {
		return ErrShutdown
	}
	if err := c.shards.SetDrained(ctx, true); err != nil {
		return err
	}
	return c.shards.WaitNoShards(ctx)
}

// Undrain lets this node own shards again after Drain; the leader hands it
// shards as balance requires.
func (c *Coordinator) Undrain(ctx context.Context) error {
	if c.closing() {
		return ErrShutdown
	}
	if c.cfg.Shards.NoShards {
		return fmt.Errorf("%w: Undrain: this node never owns shards (Config.Shards.NoShards)", ErrOperationRefused)
	}
	return c.shards.SetDrained(ctx, false)
}
