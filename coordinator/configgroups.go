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
	// Weight is this node's relative shard capacity: 0 means 1.
	Weight float64
	// DrainTimeout bounds Handler.Release, the drain of a shard being
	// handed off; the release is committed when it returns or times out.
	DrainTimeout time.Duration
	// JoinStabilization is how long a new session must have existed
	// before the leader hands it shards (so a flapping node does not pull
	// shards back and forth).
	JoinStabilization time.Duration
	// MaxMoves is the most rebalancing handoffs in flight at once; 0
	// means max(1, Count/16) and a negative value means no limit, as for
	// shardown.Params.MaxMovesInFlight. Grants of free shards and the
	// handoffs of a drained node are not limited.
	MaxMoves int
	// Epsilon is the balance slack: every node owns within
	// ceil(S·w/W·(1+ε)) shards. 0 means 0.05.
	Epsilon float64
	// RebalanceDelay coalesces bursts of changes: the leader replans
	// this long after a change (and every ReconcileInterval).
	RebalanceDelay time.Duration
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
