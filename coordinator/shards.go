package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/viewstream"
	"github.com/holdfast-go/holdfast/internal/wire"
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
	ok = ownerInto(&h, c.fsm.View(), s)
	return
}

// ownerInto fills h with the owner of shard s on v and reports whether s
// is owned. Owner and ShardTable.Owner are one call to it, small enough
// to be inlined: their Holder (too large for registers) is then filled in
// the caller's frame by this call. When Owner itself filled it, the
// caller copied the result out of Owner's result slots with 16-byte loads
// of the 8-byte stores just made there, which stalled store forwarding:
// 22 ns a lookup whose holder was read, against 7 ns when it was not.
func ownerInto(h *Holder, v *fsm.View, s ShardID) bool {
	o, token, _ := v.ShardOwner(uint32(s))
	if o == nil {
		return false
	}
	setHolder(h, o, token)
	return true
}

// setHolder fills h with session o's fields and token, field by field (a
// composite literal went through stack temporaries).
func setHolder(h *Holder, o *fsm.Session, token uint64) {
	h.Node.Name, h.Node.ID, h.Addr, h.Session, h.Token = o.Node, o.NodeID, o.Addr, o.ID, token
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
func (t *ShardTable) Owner(s ShardID) (h Holder, ok bool) {
	ok = ownerInto(&h, t.v, s)
	return
}

// WatchTable streams Table(), the shard table: the current version first,
// then every new version. A slow reader may miss intermediate versions but
// always receives the latest. The channel closes when ctx ends or the node
// shuts down.
func (c *Coordinator) WatchTable(ctx context.Context) <-chan *ShardTable {
	ch := make(chan *ShardTable, 1)
	if !c.spawn(func() { c.watch(ctx, ch) }) {
		close(ch)
	}
	return ch
}

// Watch is WatchTable under its earlier name.
//
// Deprecated: use WatchTable, named like every watch for the read it
// streams.
func (c *Coordinator) Watch(ctx context.Context) <-chan *ShardTable { return c.WatchTable(ctx) }

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

// ShardHandler is told about this node's shard leases: Serve when it
// starts owning a shard, HandOff when the leader asks it to give one up.
// Both methods are called from goroutines of their own; they may block, but
// must return once their context ends. (Earlier releases named them Acquire
// and Release, the words of a Lease, which has no drain step.)
type ShardHandler interface {
	// Serve is called when this node starts owning a shard. ctx is the
	// lease's context: it ends the moment the lease ends (handoff, loss,
	// shutdown). Serve may return at once or run the shard's work until
	// ctx ends.
	Serve(ctx context.Context, l *ShardLease)
	// HandOff is called when the leader asks this node to hand the shard
	// off, while the lease is still held: drain in-flight work, then
	// return. ctx ends after Config.Shards.DrainTimeout or when the lease's
	// belief ends, whichever comes first. When HandOff returns, the lease
	// ends (cause ErrRevoked) and the release is committed; an error is
	// logged and changes nothing else.
	HandOff(ctx context.Context, l *ShardLease) error
}

// HandlerFuncs adapts functions to a ShardHandler; a nil function is a
// no-op. It is a ShardPreparer; with PrepareFunc nil its moves are not
// prepared.
type HandlerFuncs struct {
	// ServeFunc is called by Serve.
	ServeFunc func(ctx context.Context, l *ShardLease)
	// HandOffFunc is called by HandOff.
	HandOffFunc func(ctx context.Context, l *ShardLease) error
	// PrepareFunc is called by Prepare.
	PrepareFunc func(ctx context.Context, s ShardID, from Holder) error

	// Deprecated: AcquireFunc is ServeFunc's earlier name, called by Serve
	// when ServeFunc is nil.
	AcquireFunc func(ctx context.Context, l *ShardLease)
	// Deprecated: ReleaseFunc is HandOffFunc's earlier name, called by
	// HandOff when HandOffFunc is nil.
	ReleaseFunc func(ctx context.Context, l *ShardLease) error
}

// Prepare calls PrepareFunc, if set.
func (h HandlerFuncs) Prepare(ctx context.Context, s ShardID, from Holder) error {
	if h.PrepareFunc != nil {
		return h.PrepareFunc(ctx, s, from)
	}
	return nil
}

// Serve calls ServeFunc, or AcquireFunc when ServeFunc is nil, if set.
func (h HandlerFuncs) Serve(ctx context.Context, l *ShardLease) {
	switch {
	case h.ServeFunc != nil:
		h.ServeFunc(ctx, l)
	case h.AcquireFunc != nil:
		h.AcquireFunc(ctx, l)
	}
}

// HandOff calls HandOffFunc, or ReleaseFunc when HandOffFunc is nil, if
// set.
func (h HandlerFuncs) HandOff(ctx context.Context, l *ShardLease) error {
	switch {
	case h.HandOffFunc != nil:
		return h.HandOffFunc(ctx, l)
	case h.ReleaseFunc != nil:
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
	belief shardBelief
}

// shardBelief is a shard lease's belief, read from the shard manager's
// lease on each call instead of copied into it: with 100,000 shards a node
// holds tens of thousands of ShardLeases, and 16 bytes each (two pointers,
// the parts every lease shares behind the second) keep about 1.5 MiB off
// a node's heap that the copied fields (token, belief, margin, replica
// and load meter) and the replica's bound method cost.
type shardBelief struct {
	l   *shards.Lease
	env *shardEnv
}

// shardEnv is what every ShardLease of a node shares.
type shardEnv struct {
	margin time.Duration    // Config.Session.LeaseMargin
	view   func() *fsm.View // the local replica (NextOwner)
	loads  *shardLoads      // this node's load meter (ReportLoad)
}

// get returns the belief a Lease would hold for this grant.
func (s *shardBelief) get() belief {
	return belief{token: s.l.Token(), life: s.l.Belief(), margin: s.env.margin}
}

func (s *shardBelief) Token() uint64            { return s.l.Token() }
func (s *shardBelief) Done() <-chan struct{}    { return s.l.Belief().Context().Done() }
func (s *shardBelief) Context() context.Context { return s.l.Belief().Context() }
func (s *shardBelief) Err() error               { b := s.get(); return b.Err() }
func (s *shardBelief) Remaining() time.Duration { return s.l.Belief().Observe() }
func (s *shardBelief) Checkpoint() error        { b := s.get(); return b.Checkpoint() }
func (s *shardBelief) endedAt() time.Time       { return s.l.Belief().EndedAt() }

// Shard returns the shard this lease owns.
func (l *ShardLease) Shard() ShardID { return l.belief.l.Shard() }

// Revoked returns a channel closed once the leader has asked this node to
// hand the shard off; the lease still holds until the handoff ends it.
func (l *ShardLease) Revoked() <-chan struct{} { return l.belief.l.Revoked() }

// wrapShardLease makes the ShardLease of a lease the shard manager started
// (the manager reports its end: shardLeaseEnded).
func (c *Coordinator) wrapShardLease(l *shards.Lease) *ShardLease {
	return &ShardLease{belief: shardBelief{l: l, env: c.shardEnv}}
}

// shardLeaseEnded counts a shard lease's end in the metrics.
func (c *Coordinator) shardLeaseEnded(l *ShardLease, cause error) {
	c.metrics.ends.Ended(kindShard, l.belief.l.Belief().Start(), cause)
	c.loads.meter.Forget(uint32(l.Shard()))
}

// balancerOptions wires a leader term's balancer to this node.
func (c *Coordinator) balancerOptions() shards.BalancerOptions {
	o := shards.BalancerOptions{
		View: c.fsm.View,
		Apply: func(ctx context.Context, cmd fsm.Command) (shards.Applied, error) {
			res, err := c.node.CommitAsLeader(ctx, mustEncode(cmd))
			return shards.Applied{Index: res.Index, Count: res.Count}, err
		},
		Expiring:          c.lessor.ExpiringOrDue,
		Heard:             c.lessor.Answered,
		HeardChanged:      c.lessor.AnsweredChanged,
		Log:               c.log,
		Metrics:           c.metrics.shards,
		SessionTTL:        c.cfg.Session.TTL,
		ExpiryGrace:       c.cfg.Session.ExpiryGrace,
		JoinStabilization: c.cfg.Shards.JoinStabilization,
		RebalanceDelay:    c.cfg.Shards.RebalanceDelay,
		ReconcileInterval: c.cfg.Cluster.ReconcileInterval,
		MaxMoves:          maxMoves(c.cfg.Shards.MaxMoves),
		Epsilon:           c.cfg.Shards.Epsilon,
		Loads:             c.balancerLoads,
		Report:            c.loads.plan.Store,
		Previews:          c.loads.previews,
		LoadRatio:         c.cfg.Shards.LoadRatio,
		LoadMoves:         c.cfg.Shards.LoadMoves,
	}
	c.prepareOptions(&o)
	return o
}

// maxMoves is ShardConfig.MaxMoves as the balancer takes it: a negative
// value (no limit, as in shardown.Params) becomes the largest budget.
func maxMoves(n int) int {
	if n < 0 {
		return math.MaxInt
	}
	return n
}

// newShardManager wires the owner side of shard ownership to this node.
func (c *Coordinator) newShardManager() *shards.Manager[*ShardLease] {
	addr := c.serviceAddr()
	// Without a handler there is nothing to call: no goroutine per grant.
	var serve func(context.Context, *ShardLease)
	var handOff func(context.Context, *ShardLease) error
	if h := c.cfg.Shards.Handler; h != nil {
		serve, handOff = h.Serve, h.HandOff
	}
	return shards.NewManager(shards.Options[*ShardLease]{
		View:    c.fsm.View,
		Session: c.currentSession,
		Commit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.commitRetry(ctx, cmd)
			return err
		},
		IsNoSession:    func(err error) bool { return errors.Is(err, wire.ErrNoSession) },
		Stop:           c.ctx.Done(),
		Wrap:           c.wrapShardLease,
		Serve:          serve,
		HandOff:        handOff,
		Ended:          c.shardLeaseEnded,
		DrainTimeout:   c.cfg.Shards.DrainTimeout,
		Prepare:        c.managerPrepare(),
		PrepareTimeout: c.prepareTimeout(),
		NodeID:         c.id,
		Addr:           addr,
		Weight:         max(c.cfg.Shards.Weight, c.cfg.Shards.Capacity), // one of them is 0 or both are equal
		Tags:           c.cfg.placementTags(),
		SessionTTL:     c.cfg.Session.TTL,
		Errors:         shards.Errors{Lost: ErrLeaseLost, Revoked: ErrRevoked, Shutdown: ErrShutdown, Abandoned: ErrMoveAbandoned},
		Log:            c.log,
		Metrics:        c.metrics.shards,
	})
}

// serviceAddr is the address this node's holders show: Config.ServiceAddr,
// or the RPC address when that is empty.
func (c *Coordinator) serviceAddr() string {
	if c.cfg.ServiceAddr != "" {
		return c.cfg.ServiceAddr
	}
	return c.trans.Addr()
}
