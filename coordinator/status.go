package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/lifecycle"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/storehealth"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// RaftState is this node's role in the raft group.
type RaftState = raftnode.State

// The raft roles.
const (
	StateFollower  = raftnode.StateFollower
	StateCandidate = raftnode.StateCandidate
	StateLeader    = raftnode.StateLeader
	StateShutdown  = raftnode.StateShutdown
)

// Suffrage is a member's place in the raft configuration.
type Suffrage = cluster.Suffrage

// The suffrages.
const (
	SuffrageVoter    = cluster.SuffrageVoter
	SuffrageNonVoter = cluster.SuffrageNonVoter
	SuffrageNone     = cluster.SuffrageNone // not (yet) in the raft configuration
)

// MemberState is what gossip says of a member.
type MemberState = cluster.MemberState

// The member states.
const (
	MemberAlive   = cluster.MemberAlive
	MemberSuspect = cluster.MemberSuspect
	MemberFailed  = cluster.MemberFailed
	MemberLeft    = cluster.MemberLeft
)

// Node is how the API names a node, the same way wherever it shows one
// (the node holding a grant, a gossip member, the raft leader, the node an
// operation acted on).
type Node struct {
	// Name is the node's Config.NodeName.
	Name string
	// ID is the node's identity, kept in its data dir (a node without one
	// makes a new one at each start); it is also its raft server ID.
	ID string
}

// String returns the node's name, or its ID when the name is not known.
func (n Node) String() string {
	if n.Name == "" {
		return n.ID
	}
	return n.Name
}

// Member describes one node as this node sees it: the Node, its
// addresses, its gossip State and since when (on this node's clock),
// whether it is voter-Eligible (has a data dir), its raft Suffrage, the
// ClusterID it gossips, its Zone and its placement Tags (comma-separated).
// The raft leader (RaftLeader) is a Member too.
type Member struct {
	Node
	// RPCAddr is where other nodes reach it for raft and RPC; GossipAddr
	// where it gossips.
	RPCAddr, GossipAddr string
	// State is its gossip state (MemberAlive, ...), Since when it last
	// changed, on this node's clock.
	State MemberState
	Since time.Time
	// Eligible is true for a node with a data dir: it may become a voter.
	Eligible bool
	// Suffrage is its place in the raft configuration (SuffrageVoter,
	// SuffrageNonVoter, or SuffrageNone: not in it, as a replica fed
	// outside raft or a node not yet added).
	Suffrage Suffrage
	// ClusterID is the cluster it says it belongs to ("" before it knows).
	ClusterID string
	// Zone is its Config.Zone; Tags its placement tags, comma-separated.
	Zone, Tags string
}

// Deprecated: NodeInfo was RaftLeader's answer (Name, ID and RPCAddr,
// which a Member has under the same names); use Member.
type NodeInfo = Member

// toMember converts the engine's description of a member.
func toMember(m cluster.Member) Member {
	return Member{Node: Node{Name: m.Name, ID: m.ID}, RPCAddr: m.RPCAddr, GossipAddr: m.GossipAddr, State: m.State,
		Since: m.Since, Eligible: m.Eligible, Suffrage: m.Suffrage, ClusterID: m.ClusterID, Zone: m.Zone, Tags: m.Tags}
}

// ID returns this node's identity, which is also its raft server ID.
func (c *Coordinator) ID() string { return c.id }

// NodeName returns the configured node name.
func (c *Coordinator) NodeName() string { return c.cfg.NodeName }

// RPCAddr returns the address other nodes dial for raft and RPC.
func (c *Coordinator) RPCAddr() string { return c.trans.Addr() }

// GossipAddr returns the address this node gossips on.
func (c *Coordinator) GossipAddr() string { return c.members.Addr() }

// ClusterID returns the ID of the cluster this node belongs to, or ""
// before it belongs to one. A node with a data dir knows it from its start
// on: the data dir records it from the node's bootstrap or first join.
func (c *Coordinator) ClusterID() string { return c.cluster.ClusterID() }

// RaftState returns this node's current raft role.
func (c *Coordinator) RaftState() RaftState { return c.node.State() }

// RaftLeader returns the current raft leader as this node knows it, and
// false when no leader is known. It is described as Members describes it;
// a leader gossip does not (yet) know has only its ID and RPCAddr (and its
// Name, when raft's configuration names it).
func (c *Coordinator) RaftLeader() (Member, bool) {
	a, id := c.node.LeaderWithID()
	if a == "" {
		return Member{}, false
	}
	for _, m := range c.cluster.MemberList() {
		if m.ID == string(id) {
			return toMember(m), true
		}
	}
	addr, _, _ := transport.SplitRaftAddress(a)
	return Member{Node: Node{ID: string(id), Name: c.cluster.NameOf(string(id))}, RPCAddr: addr}, true
}

// AppliedIndex returns the raft index of the last entry applied to this
// node's replica.
func (c *Coordinator) AppliedIndex() uint64 { return c.fsm.View().Index() }

// Members lists every node gossip knows of (failed and left ones until
// gossip forgets them), sorted by name, with each one's raft suffrage. A
// member of the raft configuration that gossip does not know is not listed.
func (c *Coordinator) Members() []Member {
	ms := c.cluster.MemberList()
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = toMember(m)
	}
	return out
}

// Voters returns the raft IDs of the current voters.
func (c *Coordinator) Voters() []string { return c.cluster.Voters() }

// NonVoters returns the raft IDs of the current non-voters: the raft
// configuration's other members, whether gossip knows them or not.
func (c *Coordinator) NonVoters() []string { return c.cluster.NonVoters() }

// LastToken returns the last fencing token the cluster issued, as this
// node's replica knows it.
func (c *Coordinator) LastToken() uint64 { return c.fsm.View().LastToken() }

// TokenBase returns the value the cluster's tokens started above: the
// larger of the creating leader's wall clock in microseconds and
// Cluster.TokenFloor at creation; 0 for a cluster created by an earlier
// release, and before this node's replica knows the cluster. LastToken −
// TokenBase is the number of grants since the cluster was created.
func (c *Coordinator) TokenBase() uint64 { return c.fsm.View().Cluster().TokenBase() }

// ClusterCreated returns the creating leader's wall clock when the cluster
// was created; false for a cluster created by an earlier release, and
// before this node's replica knows the cluster.
func (c *Coordinator) ClusterCreated() (time.Time, bool) {
	us := c.fsm.View().Cluster().Created
	if us <= 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}

// LeaseInfo describes one held named lease, as a replica shows it.
type LeaseInfo struct {
	// Name is the lease's name.
	Name string
	// Holder is who holds it, with the token of its grant.
	Holder Holder
	// Waiters is the number of sessions queued for the lease.
	Waiters int
}

// Leases lists every held named lease from the local replica, sorted by
// name.
func (c *Coordinator) Leases() []LeaseInfo {
	return leases.List(c.fsm.View(), func(name string, h leases.Holder, waiters int) LeaseInfo {
		return LeaseInfo{Name: name, Holder: toHolder(h), Waiters: waiters}
	})
}

// ShardState is a shard's place in its ownership cycle.
type ShardState string

// The shard states.
const (
	ShardFree     ShardState = "free"
	ShardOwned    ShardState = "owned"
	ShardRevoking ShardState = "revoking"
)

// ShardInfo describes one shard in a table version.
type ShardInfo struct {
	// Shard is the shard described.
	Shard ShardID
	// State is where the shard is in its ownership cycle.
	State ShardState
	// Owner is who owns the shard, unless State is ShardFree; Owner.Token is
	// the token of the current grant, or of the last one when the shard is
	// free (the other fields are then empty).
	Owner Holder
}

// Table returns the current version of the shard table from the local
// replica (an empty table before the cluster exists).
func (c *Coordinator) Table() *ShardTable { return &ShardTable{v: c.fsm.View()} }

// Shard describes shard s in this version; ok is false when s is out of
// range.
func (t *ShardTable) Shard(s ShardID) (ShardInfo, bool) {
	sh, ok := t.v.Shard(uint32(s))
	if !ok {
		return ShardInfo{}, false
	}
	info := ShardInfo{Shard: s, State: ShardState(sh.State.String())}
	ownerInto(&info.Owner, t.v, s) // the owning session, if any
	info.Owner.Token = sh.Token
	return info, true
}

// SessionInfo describes this node's current session.
type SessionInfo struct {
	ID string
	// Remaining is how long this node may still believe in the session
	// without another answered keepalive.
	Remaining time.Duration
	Drained   bool
}

// Session returns this node's live session; ok is false while it has none.
func (c *Coordinator) Session() (SessionInfo, bool) {
	s, _ := c.currentSession()
	if s == nil {
		return SessionInfo{}, false
	}
	info := SessionInfo{ID: s.ID(), Remaining: s.Remaining()}
	if fs, ok := c.fsm.View().Session(s.ID()); ok {
		info.Drained = fs.Drained
	}
	return info, true
}

// ErrNotReady is wrapped by Ready's error.
var ErrNotReady = errors.New("holdfast: not ready")

// Ready returns nil when this node is a member of a formed cluster that
// has a raft leader and this node holds a live session; otherwise an error
// wrapping ErrNotReady that says what is missing.
func (c *Coordinator) Ready() error {
	switch {
	case c.closing():
		return wire.Wrap(ErrNotReady, ErrShutdown)
	case c.fsm.View().Cluster().ID == "":
		return fmt.Errorf("%w: not a member of a formed cluster yet (%s)", ErrNotReady, c.Formation().Progress)
	}
	if _, ok := c.RaftLeader(); !ok {
		return fmt.Errorf("%w: no raft leader known", ErrNotReady)
	}
	if _, ok := c.Session(); !ok {
		return fmt.Errorf("%w: no live session", ErrNotReady)
	}
	return nil
}

// GroupHealth is the raft group's health as the leader's autopilot last
// judged it (Known, Leader, Age, FailureTolerance, Voters, Wanted); its
// Degraded method reports whether the group needs attention. The leader
// hands its judgement to every member of the raft configuration, so
// followers and non-voters report the leader's figures.
type GroupHealth = cluster.GroupHealth

// VoterHealth is one voter's health in a GroupHealth.
type VoterHealth = cluster.VoterHealth

// StorageHealth is this node's raft storage (its log, term and vote on
// disk): fine (the zero value), or failing since a time, with the operation
// and the error (and Failed when only a restart helps). See
// GroupHealth.Storage.
type StorageHealth = storehealth.Health

// Health returns the group's health as this node last learned it, and
// this node's own raft storage (see GroupHealth).
func (c *Coordinator) Health() GroupHealth {
	g := c.cluster.GroupHealth()
	if c.node != nil {
		g.Storage = c.node.StorageHealth()
	}
	return g
}

// Sync returns once this node's replica has applied every command the
// raft leader had committed when Sync was called, as confirmed by a quorum
// of voters: a read of Owner, Table, Leases or Session after Sync returns
// reflects every write committed before the call (what etcd's
// linearizable reads and ZooKeeper's sync() give). It costs a round trip
// to the leader and a confirmation round with the voters (shared with
// concurrent keepalives and Syncs). Without a leader, or with a leader
// that cannot confirm its leadership (it lost its quorum), Sync keeps
// retrying until ctx ends and then returns an error wrapping ctx's error
// and the last failure (ErrNoLeader, or a network error);
// ErrShutdown once the node is shutting down.
func (c *Coordinator) Sync(ctx context.Context) error { return c.reads().Sync(ctx) }

// reads is the consistent-read path over this node's raft, replica and
// lessor (see raftnode.Reads).
func (c *Coordinator) reads() raftnode.Reads {
	return raftnode.Reads{Node: c.node, Replica: c.fsm, Confirm: c.lessor.ConfirmedCommit}
}

// NoLeaderSince returns, while this node knows no raft leader, since when
// (on this node's clock) it has known none, and true; its replica may then
// be stale (Owner, Table and Leases show the state as of the last leader it
// heard from). It returns false while a leader is known.
func (c *Coordinator) NoLeaderSince() (time.Time, bool) {
	_, known := c.RaftLeader()
	return c.noLeader.Since(known)
}

// FormationLogInterval is how often a node that is not yet a member of a
// formed cluster logs its progress (see Formation) when nothing changes; a
// change is logged at once.
const FormationLogInterval = 5 * time.Second

// Formation describes how far this node is in forming or joining a
// cluster, as Coordinator.Formation reports it: whether it is formed, the
// bootstrap expectation, the candidates seen and a one-line progress.
type Formation = cluster.Formation

// Formation reports how far this node is in forming or joining a
// cluster. It reads gossip and the local replica only.
func (c *Coordinator) Formation() Formation { return c.cluster.Formation() }

// WaitReady blocks until Ready returns nil, and returns nil then; or until
// ctx ends or the node shuts down, and returns Ready's last error.
func (c *Coordinator) WaitReady(ctx context.Context) error {
	if stopped, err := lifecycle.Until(ctx, c.ctx.Done(), 20*time.Millisecond, c.Ready); !stopped {
		return err
	}
	return wire.Wrap(ErrNotReady, ErrShutdown)
}
