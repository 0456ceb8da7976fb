package coordinator

import (
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
)

// ClusterConfig is Config.Cluster: forming a cluster and keeping its
// voters.
type ClusterConfig struct {
	// BootstrapExpect is the number of voter-eligible nodes that must see
	// each other before a new cluster is bootstrapped; 0 means never
	// bootstrap, only join an existing cluster. At most Voters.
	BootstrapExpect int
	// Voters is the number of voters the cluster keeps: 1, 3 or 5. A voter
	// that fails keeps its vote until a healthy eligible node has been
	// promoted in its place; with no such node it stays a voter.
	Voters int
	// ServerStabilization is how long a non-voter must be healthy before it
	// is promoted to voter.
	ServerStabilization time.Duration
	// DeadServerStabilization is how long gossip must report a voter dead,
	// or autopilot find it unhealthy, before it counts as down and a
	// replacement is promoted; it is removed only after that promotion. A
	// voter whose keepalives or stats answers reached the leader within
	// that time is not down, whatever gossip says.
	DeadServerStabilization time.Duration
	// ReconcileInterval is how often the leader reconciles gossip members
	// with the raft configuration (it also reacts to membership events).
	ReconcileInterval time.Duration
	// BootstrapPromiseTTL is how long a node, once it has promised to join a
	// bootstrap proposal, refuses any other proposal.
	BootstrapPromiseTTL time.Duration
	// TokenFloor is read only when a new cluster is created: its first
	// fencing token is above both TokenFloor and the creating leader's wall
	// clock in microseconds. Give it the highest token the fenced resources
	// hold (holdfastctl token-floor reads it from a ledger's SQLite file)
	// when a cluster is created again after every data dir was lost, so that
	// its holders are never fenced out by the earlier incarnation's tokens
	// and the earlier incarnation's paused holders never win. 0: the clock
	// alone. At most 2^62 (fsm.MaxTokenBase). A running cluster ignores it.
	TokenFloor uint64
	// LeaveCluster names a cluster this node's data dir may belong to and
	// that the node is to leave: when the data dir records that cluster, New
	// moves its raft state and node identity aside (into a directory named
	// left-<cluster>-<time> in the data dir) and the node starts as a new
	// node, free to join the cluster its Join seeds belong to. A data dir of
	// any other cluster is left alone, so the setting is harmless once the
	// node has left. New refuses a data dir of another cluster than the
	// seeds' and names this setting.
	LeaveCluster string
	// ReplicaFeed keeps a node without a DataDir out of the raft
	// configuration: it pulls the replicated state (the applied commands
	// with their raft indexes, or a snapshot) from a voter-eligible member
	// of the raft group, chosen by rendezvous hashing of its name, the
	// leader last (package feed), so the raft leader replicates only to the
	// voters and the voter-eligible standbys however many nodes the cluster
	// has. Reads, Sync, keepalives and proposals behave as on a raft
	// non-voter. On in DefaultConfig and DefaultLocalConfig. Off: the node
	// joins raft as a non-voter, replicated to by the leader itself (the
	// behaviour before the feed; the leader's work then grows with the node
	// count, and past about 200 nodes it no longer keeps up). Each node
	// decides for itself and says so in its gossip, so a cluster may mix
	// the two; the setting is ignored on a node with a DataDir.
	ReplicaFeed bool
}

// part is the configuration of the formation part (internal/cluster); the
// two structs have the same fields, so a field added to one alone fails to
// compile here.
func (c ClusterConfig) part() cluster.Config { return cluster.Config(c) }

// SessionConfig is Config.Session: the timing every lease, permit and shard
// lease of a node rests on.
type SessionConfig struct {
	// TTL is how long a node's session lives without a keepalive
	// answered by the leader.
	TTL time.Duration
	// LeaseMargin is the safety margin a holder keeps: its belief in a lease
	// ends LeaseMargin before the earliest instant the leader could expire
	// its session, and Checkpoint fails once less than LeaseMargin is left.
	LeaseMargin time.Duration
	// MaxClockDrift bounds the clock rate difference between any two nodes
	// (0.01 = 1%). Holders shorten their belief by this fraction of the TTL.
	MaxClockDrift float64
	// ExpiryGrace is added to every session's deadline when a node becomes
	// raft leader, so no holder's belief can outlive the new deadline (see
	// lease rule 3 in docs/ARCHITECTURE.md). At least the raft election timeout.
	ExpiryGrace time.Duration
}

// ShardConfig is Config.Shards: the cluster's shards and this node's part in
// owning them.
type ShardConfig struct {
	// Count is the fixed number of shards, recorded when the cluster is
	// created. Positive.
	Count int
	// Handler is told when this node starts owning a shard and when the
	// leader asks it to hand one off. Nil: shards are owned (and visible in
	// Owned and Owner) without callbacks.
	Handler ShardHandler
	// Weight is this node's relative shard capacity: 0 means 1. The
	// balancer's target for a node is its share of the total load (or of
	// the shards, without load reports) in proportion to it: a node of
	// weight 2 carries twice what a node of weight 1 does. Capacity is the
	// same setting under the name the placement docs use; set one of them.
	Weight float64
	// Tags label this node for placement rules (ActionSetShardRule): a
	// rule lets only nodes carrying all its tags own the shards it
	// covers. A node with a Config.Zone also carries the tag "zone=ZONE".
	// Each tag is 1 to 64 bytes of printable ASCII without spaces or
	// commas; at most 16, the zone's included, and 192 bytes together
	// (they are also gossiped: Members shows them). They are written into
	// the node's sessions, which the leader places by: a change takes
	// effect at the next start.
	Tags []string
	// NoShards makes this node one that never owns a shard (a voter or a
	// lease-only role): its sessions are created drained, so the leader
	// gives it none, and Undrain refuses. Status shows it drained.
	NoShards bool
	// Capacity is Weight under another name (0: Weight decides). Setting
	// both to different values is a configuration error.
	Capacity float64
	// LoadHalfLife is the half-life of the moving average that smooths
	// the loads this node's shard leases report (ShardLease.ReportLoad);
	// 0 means DefaultLoadHalfLife (30s).
	LoadHalfLife time.Duration
	// LoadRatio is the balance band by load, in (1, 2): once any shard has
	// a load report, the leader moves shards only when a node carries more
	// than LoadRatio times its target (or an eligible node less than
	// 2-LoadRatio times it), and then until every node is within half that
	// band (see shardown.Params.LoadRatio). 0 means 1.10.
	LoadRatio float64
	// LoadMoves is the number of load moves a planning round makes when
	// the nodes are just outside the band; the round's budget grows with
	// the distance from balance (see shardown.Params.LoadMoves) and stays
	// within MaxMoves. 0 means max(1, Count/64).
	LoadMoves int
	// DrainTimeout bounds Handler.HandOff, the drain of a shard being
	// handed off; the release is committed when it returns or times out.
	DrainTimeout time.Duration
	// JoinStabilization is how long a new session must have existed
	// before the leader hands it shards (so a flapping node does not pull
	// shards back and forth). A table nobody owns yet (a forming cluster)
	// gets its first grants once no new session has appeared for this
	// long, or Session.TTL after the first one appeared, whichever comes
	// first: the shards are then placed over the nodes that formed
	// together, not granted to the first few and moved.
	JoinStabilization time.Duration
	// MaxMoves is the most rebalancing handoffs in flight at once; 0
	// means max(1, Count/16) and a negative value means no limit, as for
	// shardown.Params.MaxMovesInFlight. Grants of free shards and the
	// handoffs of a drained node are not limited. Balancing by load may
	// exchange two shards between two nodes, which takes two handoffs
	// started in the same round: with MaxMoves 1 it makes no exchange.
	MaxMoves int
	// Epsilon is the balance slack: every node owns within
	// ceil(S·w/W·(1+ε)) shards. 0 means 0.05.
	Epsilon float64
	// RebalanceDelay coalesces bursts of changes: the leader replans
	// this long after a change (and every ReconcileInterval).
	RebalanceDelay time.Duration
	// PrepareTimeout bounds the prepare of a planned move (see
	// ShardPreparer): the leader revokes the old owner once the next owner
	// is ready or this much time has passed. 0 means DrainTimeout; a
	// negative value turns the prepare phase off (moves as before it).
	PrepareTimeout time.Duration
}

// GossipConfig is Config.Gossip: gossip timing and encryption.
type GossipConfig struct {
	// Profile selects memberlist's timing profile.
	Profile GossipProfile
	// Keys are the AES keys (16, 24 or 32 bytes each) that encrypt and
	// authenticate gossip: the first encrypts, all of them decrypt. Empty:
	// gossip in clear text. Coordinator.InstallGossipKey rotates them.
	Keys [][]byte
}
