package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/feed"
	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/lifecycle"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/shards"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// startRaft opens the stores and starts the raft instance.
func (c *Coordinator) startRaft() error {
	n, err := raftnode.Start(raftnode.Options{
		ID:            c.id,
		DataDir:       c.cfg.DataDir,
		LogFS:         c.cfg.logFS,
		Timing:        c.cfg.Raft.part(),
		RPCTimeout:    c.cfg.RPCTimeout,
		Trans:         c.trans,
		FSM:           c.fsm,
		NotifyCh:      c.leaderCh,
		Futures:       &c.futs,
		Context:       c.ctx,
		Log:           c.log,
		Metrics:       c.metrics.raft,
		Applied:       func() uint64 { return c.fsm.View().Index() },
		LeaderChanged: c.noLeader.Changed,
		Cluster:       c.clusterFile.ID,
	})
	if err != nil {
		return err
	}
	c.node = n
	return nil
}

// newSessionClient wires the holder's side of sessions
// (internal/session.Client) to this node's raft, replica and transport.
// New makes it, so the node's current session can be read (metrics, API)
// from the start; its Run is one of the loops start starts, under sessCtx.
func (c *Coordinator) newSessionClient() *session.Client {
	leader := func() (string, bool) { return c.node.LeaderRPCAddr() } // c.node starts later
	return session.NewClient(session.ClientOptions{
		Log:           c.log,
		Clock:         c.clock,
		Step:          c.clockStep(),
		TTL:           c.cfg.Session.TTL,
		RPCTimeout:    c.cfg.RPCTimeout,
		Margin:        c.cfg.Session.LeaseMargin,
		MaxDrift:      c.cfg.Session.MaxClockDrift,
		NewID:         raftnode.NewID,
		LeaderKnown:   func() bool { addr, _ := leader(); return addr != "" },
		LeaderChanged: c.noLeader.Changed,
		Held:          func() error { return c.node.StorageBlocking() },
		Create: func(ctx context.Context, id string, gen uint64) (uint64, error) {
			cmd := &fsm.SessionCmd{ID: id, Node: c.cfg.NodeName, NodeID: c.id, TTLNanos: int64(c.cfg.Session.TTL), Gen: gen,
				Level: fsm.CommandLevel}
			c.shards.FillSessionCmd(cmd)
			res, err := c.node.Commit(ctx, fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
			if err == nil && res.Stale {
				err = session.ErrStale
			}
			return res.Index, err
		},
		Generation: func() uint64 { return session.Generation(c.fsm.View(), c.id) },
		Close: func(ctx context.Context, id string) error {
			_, err := c.node.Commit(ctx, fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: id}})
			return err
		},
		KeepAlive: session.SendKeepAlive(leader, func(ctx context.Context, id string) (uint64, error) {
			index, err := c.lessor.KeepAlive(ctx, id)
			if err == nil {
				c.recordLocalLoads(id)
			}
			return index, err
		}, func() session.Caller { return c.trans }, c.loads.meter.Report),
		Wait:     c.fsm.Wait,
		Renewing: func(v *fsm.View, s *session.Session) { c.shards.Sync(v, s) },
		Spawn:    c.spawn,
		Metrics:  c.metrics.session,
	})
}

// currentSession returns the session if its belief is valid, else nil,
// plus a channel closed when the session changes.
func (c *Coordinator) currentSession() (*session.Session, <-chan struct{}) {
	return c.sessions.Current()
}

// newLessor wires the leader's side of sessions (internal/session.Lessor)
// to this node's raft, replica and transport. Its Run is the leader duty's
// (leaderLoop), its ConfirmLoop one of the node's loops.
// keepAliveConfirmSpacing spaces the confirmation rounds keepalives start
// on the leader: at most 100 a second, whatever the node count (a
// keepalive waits at most this long for its round; Sync never waits).
const keepAliveConfirmSpacing = 10 * time.Millisecond

func (c *Coordinator) newLessor() *session.Lessor {
	return session.NewLessor(session.LessorOptions{
		Log:  c.log,
		View: c.fsm.View,
		Expire: func(ctx context.Context, cmd fsm.Command) error {
			_, err := c.node.CommitAsLeader(ctx, mustEncode(cmd))
			return err
		},
		Term:           c.node.Term,
		Leading:        c.node.Leading,
		Voters:         func() []session.Voter { return session.VotersOf(c.node.Servers()) },
		Self:           c.id,
		Confirm:        session.AskConfirm(c.trans),
		ConfirmTimeout: min(c.cfg.RPCTimeout, c.cfg.Session.TTL/3),
		ConfirmSpacing: keepAliveConfirmSpacing,
		ExpiryGrace:    c.cfg.Session.ExpiryGrace,
		NotLeader:      session.NotLeaderHere(c.node.LeaderRPCAddr),
		Metrics:        c.metrics.session,
		StallThreshold: c.cfg.Session.TTL / 10,
		Loads:          c.loads.book.Record,
	})
}

// newCluster builds the formation part (internal/cluster) over this
// node's raft, transport and replica; gossip is attached by
// startMembership.
func (c *Coordinator) newCluster() *cluster.Cluster {
	o := cluster.Options{
		NodeName:             c.cfg.NodeName,
		ID:                   c.id,
		RPCAddr:              c.trans.Addr(),
		Zone:                 c.cfg.Zone,
		Tags:                 strings.Join(c.cfg.Shards.Tags, ","),
		Eligible:             c.cfg.DataDir != "",
		Join:                 c.cfg.Join,
		Config:               c.cfg.Cluster.part(),
		Shards:               c.cfg.Shards.Count,
		SnapshotThreshold:    c.cfg.Raft.SnapshotThreshold,
		RPCTimeout:           c.cfg.RPCTimeout,
		HeartbeatTimeout:     c.cfg.Raft.HeartbeatTimeout,
		CommitTimeout:        c.cfg.Raft.CommitTimeout,
		FormationLogInterval: FormationLogInterval,
		TLS:                  c.cfg.TLS != nil,
		RequireTLS:           c.cfg.TLS != nil && c.cfg.TLS.RequireTLS,
		Raft:                 c.node.Raft(),
		Caller:               c.trans,
		Heard:                c.lessor, // its record of the nodes that reached this leader
		View:                 c.fsm.View,
		ApplyLocal: func(ctx context.Context, cmd []byte) error {
			_, err := c.node.CommitAsLeader(ctx, cmd)
			return err
		},
		Issue:   c.node.IssueFuture,
		Record:  clusterRecord{c.clusterFile},
		Metrics: c.metrics.cluster,
		NewID:   raftnode.NewID,
		Log:     c.log,
		Closing: c.closing,
	}
	return cluster.New(o)
}

// clusterRecord is the cluster part's Record over the data dir's file.
type clusterRecord struct{ f *raftnode.ClusterFile }

func (r clusterRecord) ID() string { return r.f.ID() }

func (r clusterRecord) Set(id string, incarnation int64) error {
	return r.f.Record(raftnode.ClusterRecord{ID: id, Incarnation: incarnation})
}

// startMembership creates the gossip member over the keyring the data dir
// or Config.Gossip.Keys gives, makes the cluster-wide keyring over it, and
// hands it to the cluster part, which makes a first join attempt. A
// duplicate name fails New; other join failures are retried in the
// background.
func (c *Coordinator) startMembership() error {
	gn, _ := c.cfg.Network.(transport.GossipNetwork)
	gossipConfig := func(keys [][]byte) membership.Config {
		// AdvertiseGossipAddr is set by cluster.ResolveAdvertise too when GossipAddr binds every interface.
		return c.cluster.GossipConfig(c.cfg.GossipAddr, c.cfg.AdvertiseGossipAddr, c.cfg.Gossip.Profile == GossipLocal, keys)
	}
	m, keys, err := keyring.Start(keyring.FileOptions{DataDir: c.cfg.DataDir, ConfigKeys: c.cfg.Gossip.Keys, Log: c.log}, gossipConfig, gn,
		keyring.Options{NodeName: c.cfg.NodeName, Caller: c.trans, Timeout: c.cfg.RPCTimeout, Plaintext: c.cfg.TLS == nil, Log: c.log,
			Closed: func() error { return context.Cause(c.ctx) }}) // ErrShutdown once closing
	if err != nil {
		return configErr(err) // a bad keyring names its Config field
	}
	c.members, c.gossipKeys = m, keys
	if err := c.cluster.Join(c.ctx, m); err != nil { // a duplicate name, or another cluster
		var fe *cluster.ForeignClusterError
		if errors.As(err, &fe) {
			return foreignClusterErr(c.cfg.DataDir, fe)
		}
		return fmt.Errorf("%w: %w", ErrDuplicateName, err)
	}
	c.trans.SetRaftResolver(c.cluster.RPCAddrOf) // a voter restarted elsewhere is reached where gossip places it
	return nil
}

// Join asks the gossip pool at seeds to admit this node, in addition to
// Config.Join. It returns how many seeds answered; an error wrapping
// ErrDuplicateName when the name is taken.
func (c *Coordinator) Join(ctx context.Context, seeds []string) (int, error) {
	if c.ctx.Err() != nil {
		return 0, ErrShutdown
	}
	n, err := c.members.Join(ctx, seeds)
	if errors.Is(err, membership.ErrDuplicateName) {
		err = fmt.Errorf("%w: %w", ErrDuplicateName, err)
	}
	return n, err
}

// newLeases builds the part that holds this node's leases and semaphore
// permits (package internal/leases) over the coordinator's replica,
// proposer and session. It starts the part's watch loop; closeAll joins it.
func newLeases(c *Coordinator) *leases.Manager {
	return leases.New(leases.Options{
		View:     c.fsm.View,
		Sessions: c.sessions,
		Stop:     c.ctx.Done(),
		AskLeader: func(ctx context.Context, r wire.WaitGrantRequest) (rep wire.WaitGrantReply, err error) {
			addr, self := c.node.LeaderRPCAddr()
			if self || addr == "" {
				return rep, wire.ErrNoLeader // this node leads: its replica answers first
			}
			return rep, wire.FromRemote(c.trans.Call(ctx, addr, wire.MethodWaitGrant, r, &rep))
		},
		Proposer:       c.node,
		AttemptTimeout: c.cfg.RPCTimeout,
		LeaderChanged:  c.noLeader.Changed,
		Log:            c.log,
		Metrics:        c.metrics.leases,
	})
}

// grantBelief is the belief of a lease's or permit's grant.
func (c *Coordinator) grantBelief(g *leases.Grant) belief {
	return belief{token: g.Token(), life: g.Belief(), margin: c.cfg.Session.LeaseMargin}
}

// commitRetry commits an idempotent command of the facade's own (an
// operator's, the shard manager's), retrying while its outcome is unknown
// (see leases.Retry).
func (c *Coordinator) commitRetry(ctx context.Context, cmd fsm.Command) (wire.ApplyResult, error) {
	return leases.Retry(ctx, cmd, c.node.Commit, c.log)
}

// maxPendingForwards bounds the commands other nodes forward to this node
// (as raft leader) that may wait for their commit at once; more are refused
// with wire.ErrBusy, which the forwarding node retries with backoff.
const maxPendingForwards = 512

// newDispatcher routes the inbound RPCs to the parts that answer them.
func (c *Coordinator) newDispatcher() *wire.Dispatcher {
	d := wire.NewDispatcher(c.closing)
	c.cluster.Register(d)
	c.lessor.Register(d)
	d.Handle(wire.MethodApply, c.node.Forwards(maxPendingForwards, c.metrics.raft, c.log))
	d.Handle(wire.MethodRemove, c.node.ServeRemove)
	d.Handle(wire.MethodSync, c.reads().ServeSync)
	d.Handle(wire.MethodWaitGrant, wire.Typed(c.leases.ServeWait))
	d.Handle(wire.MethodOperate, wire.Typed(c.ops.Serve))
	c.registerFeed(d)
	d.Handle(wire.MethodShardPrepare, wire.Typed(c.prepareRPC().Serve))
	d.Handle(wire.MethodGossipKeyring, func(_ context.Context, body []byte) ([]byte, error) { return c.gossipKeys.Serve(body) })
	return d
}

// leaderLoop runs the leader's duties while this node leads (see
// raftnode.FollowLeadership).
func (c *Coordinator) leaderLoop() {
	raftnode.FollowLeadership(c.ctx, c.leaderCh, c.log, c.metrics.raft.LeadershipChanged, c.leaderDuties)
}

// leaderDuties runs while this node leads: it makes sure the log is applied
// (barrier), that the cluster is initialised, runs the lessor and the
// balancer, and the cluster part's autopilot and member reconciler.
func (c *Coordinator) leaderDuties(ctx context.Context) {
	if !c.node.Barrier(ctx, c.cfg.Raft.CommitTimeout) || !c.cluster.InitCluster(ctx) {
		return
	}
	lifecycle.Together(ctx, c.lessor.Run, func(ctx context.Context) {
		defer c.loads.plan.Store(nil) // the report is the leader's only
		shards.NewBalancer(c.balancerOptions()).Run(ctx)
	}, c.cluster.Lead) // the last: autopilot and the member reconciler, until ctx ends
}

func mustEncode(cmd fsm.Command) []byte {
	b, err := fsm.Encode(cmd)
	if err != nil {
		panic(err) // only for commands built in this package
	}
	return b
}

// feedReplica reports whether this node is a replica fed outside raft
// (Config.Cluster.ReplicaFeed, and no DataDir).
func (c *Coordinator) feedReplica() bool { return c.cfg.Cluster.ReplicaFeed && c.cfg.DataDir == "" }

// registerFeed serves the replica feed (feed.Method) to replicas outside
// raft, while this node is in touch with the raft group.
func (c *Coordinator) registerFeed(d *wire.Dispatcher) {
	s := feed.NewServer(feed.ServerOptions{
		Replica: c.fsm,
		Logs:    c.node.LogStore(),
		Serving: c.feedServing,
		Leader: func() (string, string) {
			addr, _ := c.node.LeaderRPCAddr()
			_, id := c.node.LeaderWithID()
			return addr, string(id)
		},
		LeaderChanged: c.noLeader.Changed,
	})
	d.Handle(feed.Method, wire.Typed(s.Serve))
}

// feedServing: this node is a voter-eligible member of the raft group
// whose replica is recent (feed.Recent).
func (c *Coordinator) feedServing() bool {
	r := c.node.Raft()
	return c.cfg.DataDir != "" && feed.Recent(r.LastIndex(), c.fsm.View().Cluster().ID != "", c.node.Leading(), r.LastContact(),
		c.cfg.Raft.HeartbeatTimeout)
}

// startFeed keeps this node's replica fed outside raft (feedReplica).
func (c *Coordinator) startFeed() {
	ttl := feed.DefaultMaxWait + 2*c.cfg.RPCTimeout
	cl := feed.NewClient(feed.ClientOptions{
		Name:    c.cfg.NodeName,
		Replica: c.fsm,
		Servers: c.feedServers,
		Call:    c.trans.Call,
		Leader: func(addr, id string) {
			if c.node.SetLeaderHint(addr, id, ttl) {
				c.noLeader.Notify(addr != "")
			}
		},
		RPCTimeout: c.cfg.RPCTimeout,
		Log:        c.log,
		InRaft:     func() bool { return c.node.Raft().LastIndex() > 0 },
	})
	c.spawn(func() { cl.Run(c.ctx) })
}

// feedServers are the live voter-eligible members of this node's cluster.
func (c *Coordinator) feedServers() []feed.Peer {
	return feed.PeersOf(c.members.Members(), c.id, c.ClusterID())
}
