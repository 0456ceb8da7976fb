package coordinator

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/lifecycle"
	"github.com/holdfast-go/holdfast/internal/operator"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/tlsfiles"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Coordinator is one node of a holdfast cluster: a gossip member, a raft
// server (voter or non-voter) with a local replica of the state, and the
// public API. All methods are safe for concurrent use.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	id  string // raft server ID: the node identity, see raftnode.PrepareDataDir
	// clusterFile records the cluster this node belongs to in its data dir
	// (raftnode.PrepareDataDir, raftnode.Node.RecordOlderDataDir).
	clusterFile *raftnode.ClusterFile

	fsm        *fsm.FSM
	trans      *transport.Transport
	node       *raftnode.Node // raft host: stores, futures, propose/forward
	members    *membership.Membership
	cluster    *cluster.Cluster // formation, membership of the raft group, autopilot
	metrics    *metrics
	lessor     *session.Lessor
	shards     *shards.Manager[*ShardLease]
	shardCount atomic.Int64 // the cluster's shard count, once known
	loads      *shardLoads  // load reports: this node's, and the leader's book (placement.go)
	shardEnv   *shardEnv    // what every ShardLease shares

	sessCtx    context.Context // parent of every session; ends at leave or close
	sessCancel context.CancelCauseFunc
	sessions   *session.Client // keeps this node in a session
	clock      Clock           // measures beliefs (Config.Clock or SystemClock)

	leases *leases.Manager    // this node's leases and semaphore permits
	ops    *operator.Operator // operators' actions (operate.go)

	loops lifecycle.Group  // the goroutines Shutdown and Close join (spawn)
	futs  raftnode.Futures // raft futures in flight (the node's)

	leaderCh chan bool            // raft's NotifyCh
	noLeader raftnode.LeaderWatch // since when no raft leader is known

	gossipKeys *keyring.Keyring   // cluster-wide gossip key rotation (security.go)
	tlsReload  *tlsfiles.Reloader // follows the TLS files; nil without TLS (security.go)
	tlsMetrics tlsfiles.Metrics   // counts TLS reloads

	ctx      context.Context // ends when Shutdown or Close begins
	cancel   context.CancelCauseFunc
	stopOnce sync.Once
	stopErr  error
	done     chan struct{} // closed once stopped (Done)
	leaving  atomic.Bool
}

// New starts a node: it opens the data dir, starts raft, joins the gossip
// pool (retrying in the background), and returns. The cluster may not have
// formed yet when New returns; use WaitReady to wait. New
// returns an error wrapping ErrInvalidConfig for a bad Config,
// ErrDuplicateName when a live member already uses NodeName, and a
// *ForeignClusterError (ErrForeignCluster) when DataDir belongs to another
// cluster than the Join seeds'.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg:      cfg,
		log:      cfg.Logger,
		fsm:      fsm.New(),
		leaderCh: make(chan bool, 16),
		done:     make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.clock = cfg.Clock
	if c.clock == nil {
		c.clock = SystemClock()
	}
	c.log = c.log.With("node", cfg.NodeName)
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.sessCtx, c.sessCancel = context.WithCancelCause(c.ctx)
	c.metrics = newMetrics()
	c.loads = newShardLoads(cfg.Shards)
	c.shardEnv = &shardEnv{margin: cfg.Session.LeaseMargin, view: c.fsm.View, loads: c.loads}
	c.metrics.shards.BindPlan(c.loads.plan.Load)
	c.sessions = c.newSessionClient()
	c.noLeader.Start() // no leader is known at start
	if err := c.start(); err != nil {
		c.cancel(ErrShutdown)
		c.closeAll()
		return nil, err
	}
	return c, nil
}

// start brings up every part in dependency order; on error the caller
// closes whatever was opened.
func (c *Coordinator) start() error {
	ident, file, err := raftnode.PrepareDataDir(raftnode.DataDirOptions{DataDir: c.cfg.DataDir, NodeName: c.cfg.NodeName,
		AllowRename: c.cfg.AllowRename, LeaveCluster: c.cfg.Cluster.LeaveCluster, Also: []string{keyring.FileName}, Log: c.log})
	if err != nil {
		return configErr(err) // a data dir of another name is a NodeName error
	}
	c.id, c.clusterFile = ident.ID, file
	picked := cluster.ResolveAdvertise(c.cfg.RPCAddr, &c.cfg.AdvertiseRPCAddr, c.cfg.GossipAddr, &c.cfg.AdvertiseGossipAddr)
	c.trans, err = c.newTransport()
	if err != nil {
		return err
	}
	if err := c.startRaft(); err != nil {
		return err
	}
	c.node.RecordOlderDataDir(c.clusterFile, c.cfg.DataDir, c.fsm.View().Cluster(), c.log)
	c.lessor = c.newLessor() // before the cluster part, which asks it whom it heard
	c.cluster = c.newCluster()
	if err := c.startMembership(); err != nil {
		return err
	}
	cluster.WarnPicked(c.log, picked, c.cfg.RPCAddr, c.RPCAddr(), c.cfg.GossipAddr, c.GossipAddr())
	cluster.WarnLoopbackAdvertise(c.log, c.cfg.Join, c.RPCAddr(), c.GossipAddr())
	c.leases = newLeases(c)
	c.tlsReload.Start(c.trans) // follows the TLS files, if any
	c.shards = c.newShardManager()
	if c.cfg.Shards.NoShards {
		c.shards.StartDrained() // before the first session: it never owns a shard
	}
	c.metrics.register(c.log, c.cfg.Registerer, &c.tlsMetrics) // every part exists: a scrape meets no nil part
	c.ops = c.newOperator()
	c.trans.SetHandler(transport.HandlerFunc(c.newDispatcher().ServeRPC))
	c.spawn(c.leaderLoop)
	c.cluster.Start()
	c.spawn(func() { c.lessor.ConfirmLoop(c.ctx) })
	c.spawn(func() { c.sessions.Run(c.sessCtx) })
	c.shards.Start()
	c.spawn(func() { c.noLeader.Run(c.ctx, c.node.Raft()) })
	if c.feedReplica() {
		c.startFeed()
	}
	return nil
}

// spawn runs f in a goroutine that Shutdown and Close wait for; it reports
// false (and does not run f) once closing has begun.
func (c *Coordinator) spawn(f func()) bool { return c.loops.Go(f) }

// closing reports whether Shutdown or Close has begun.
func (c *Coordinator) closing() bool { return c.ctx.Err() != nil }

// Shutdown stops the node gracefully, for a restart or a deploy: it hands
// every shard it owns to other nodes (waiting at most 2 × Session.TTL +
// Shards.DrainTimeout, and only when another node can own shards), ends its
// leases and session, hands raft leadership to another voter, leaves the
// gossip pool, and then closes everything. A voter keeps its place in the
// raft configuration: when it comes back (with its data dir) it votes
// again at once, and while it is away the others treat it as a voter that
// is down (one that never returns is replaced by an eligible node after
// Cluster.DeadServerStabilization, never removed without one). A non-voter
// takes itself out of the configuration; it is added back when it returns.
// When gossip shows no quorum of voters alive (the last nodes of a cluster
// stopped one by one), the handoff and the session's close, which could not
// commit, are skipped; and once no raft leader has been known for
// Config.ShutdownWithoutLeader (default 5s; counted from when this node
// lost it), every remaining step that must commit is skipped, so Shutdown
// without a quorum returns within about that long. Each skipped step is
// logged ("shutdown: skipped handing shards off: ..."), and is not an
// error. To take a node out for good, use Leave. If ctx ends first the
// remaining steps are skipped and the node is closed. It is safe to call more than
// once; later calls (and a Leave after it) return the first result.
func (c *Coordinator) Shutdown(ctx context.Context) error {
	c.stopGracefully(ctx, nil)
	return c.stopErr
}

// stopGracefully stops the node as Shutdown does (decommission nil) or as
// Leave does, unless a stop began first; it reports whether it ran.
func (c *Coordinator) stopGracefully(ctx context.Context, decommission *LeaveOptions) (ran bool) {
	c.stopOnce.Do(func() {
		ran = true
		c.leaving.Store(true)
		err := c.leave(ctx, decommission)
		c.cancel(ErrShutdown)
		c.stopErr = errors.Join(err, c.closeAll())
		close(c.done)
	})
	return ran
}

// Close stops the node at once, without leaving: to the others it looks
// like a crash. It is safe to call more than once, and after Shutdown.
func (c *Coordinator) Close() error {
	c.stopOnce.Do(func() {
		c.cancel(ErrShutdown)
		c.stopErr = c.closeAll()
		close(c.done)
	})
	return c.stopErr
}

// Done returns a channel closed once the node has stopped: Shutdown, Close
// or Leave has closed every part. An application that lets an operator
// decommission the node (admin's leave action) waits on it to exit.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// closeSession ends every lease and the session loop, then, with commit,
// commits the session's close so its leases pass to their next waiters at
// once.
func (c *Coordinator) closeSession(ctx context.Context, commit bool) error {
	var s *session.Session
	if c.sessions != nil {
		s = c.sessions.Last()
	}
	c.sessCancel(ErrShutdown)
	c.leases.EndAll(ErrShutdown)
	c.shards.End(ErrShutdown)
	if s == nil || c.node == nil || !commit {
		return nil
	}
	cmd := fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: s.ID()}}
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*c.cfg.RPCTimeout)
		_, err := c.node.Commit(attempt, cmd)
		cancel()
		// Closing a closed session changes nothing: while the leader is
		// lost or changing (the last voters of a cluster stopping, one of
		// them still leading for a moment), ask again until ctx ends. A
		// stop's commit context ends once no leader has been known for
		// ShutdownWithoutLeader, and the step is then skipped.
		if err == nil || ctx.Err() != nil || !raftnode.LeaderLost(err) {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// closeAll stops every part that was started, in reverse order, and waits
// for every goroutine.
func (c *Coordinator) closeAll() error {
	var errs []error
	c.loops.Close()
	if c.leases != nil {
		c.leases.EndAll(ErrShutdown)
	}
	if c.shards != nil {
		c.shards.End(ErrShutdown)
	}
	if c.cluster != nil {
		c.cluster.Close() // autopilot stopped for good, the part's loops joined
	}
	if c.members != nil {
		errs = append(errs, c.members.Shutdown())
	}
	if c.node != nil {
		errs = append(errs, c.node.Stop())
	}
	c.tlsReload.Stop()
	if c.trans != nil {
		errs = append(errs, c.trans.Close())
	}
	if c.shards != nil {
		c.shards.Close()
	}
	c.loops.Wait()
	if c.leases != nil {
		c.leases.Close()
	}
	if c.node != nil {
		errs = append(errs, c.node.CloseStores())
	}
	if c.metrics != nil {
		c.metrics.unregister()
	}
	return errors.Join(errs...)
}

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
	if !c.stopGracefully(ctx, &opts) {
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
// known for Config.ShutdownWithoutLeader (see lifecycle.Steps). Each skipped or
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
	steps := lifecycle.StepsOptions{Log: c.log, Leaderless: cmp.Or(max(c.cfg.ShutdownWithoutLeader, 0), DefaultShutdownWithoutLeader),
		NoLeaderSince: c.NoLeaderSince, NoLeaderChanged: c.noLeader.Changed}
	o := lifecycle.StopOptions{StepsOptions: steps, Commit: plan.Quorum || decommission != nil, HandOff: c.shards.HandOff,
		CloseSession: c.closeSession}
	if plan.Transfer {
		o.TransferLeadership = c.node.TransferLeadership
	}
	switch {
	case decommission != nil:
		o.Decommission = func(ctx context.Context) error {
			rep, err := c.cluster.Leave(ctx, decommission.Force, false)
			if err == nil {
				c.log.Info("left the raft configuration for good", "replaced_by", c.cluster.NameOf(rep.Promoted), "replacement_id", rep.Promoted)
			}
			return err
		}
	case plan.RemoveSelf:
		o.RemoveSelf = c.node.RemoveSelf
	}
	if c.members != nil {
		o.LeaveGossip = c.members.Leave
	}
	return lifecycle.Stop(ctx, o)
}

// DefaultShutdownWithoutLeader is Config.ShutdownWithoutLeader when it is
// zero.
const DefaultShutdownWithoutLeader = 5 * time.Second
