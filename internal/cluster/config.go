package cluster

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// Config is the facade's Config.Cluster (ClusterConfig mirrors it field for field and converts to it):
// forming a cluster and keeping its voters.
type Config struct {
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

// FieldError is a Config rule broken, naming the facade's Config field.
type FieldError struct{ Field, Msg string }

// Error is the field at fault and what is wrong with it.
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ConfigField returns the field at fault and what is wrong with it.
func (e *FieldError) ConfigField() (field, msg string) { return e.Field, e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: "Cluster." + field, Msg: fmt.Sprintf(format, args...)}
}

// CheckSize returns the first broken rule on Voters and BootstrapExpect
// (only a voter-eligible node bootstraps), or nil.
func (c Config) CheckSize(eligible bool) error {
	switch {
	case c.Voters != 1 && c.Voters != 3 && c.Voters != 5:
		return fieldErr("Voters", "is %d; must be 1, 3 or 5", c.Voters)
	case c.BootstrapExpect < 0:
		return fieldErr("BootstrapExpect", "is %d; must be 0 (only join) or more", c.BootstrapExpect)
	case c.BootstrapExpect > c.Voters:
		return fieldErr("BootstrapExpect", "is %d, above Cluster.Voters (%d): the nodes that form a cluster all become voters; "+
			"raise Cluster.Voters (1, 3 or 5) to at least %d, or lower BootstrapExpect", c.BootstrapExpect, c.Voters, c.BootstrapExpect)
	case c.BootstrapExpect > 0 && !eligible:
		return fieldErr("BootstrapExpect", "is %d but DataDir is empty: only a node with a DataDir can form a cluster; set DataDir "+
			"(one node alone: DataDir, Cluster.Voters = 1 and Cluster.BootstrapExpect = 1), or BootstrapExpect = 0 to join an existing cluster",
			c.BootstrapExpect)
	case c.TokenFloor > fsm.MaxTokenBase:
		return fieldErr("TokenFloor", "is %d; must be at most 2^62 (%d) so that tokens fit a signed 64-bit column", c.TokenFloor, uint64(fsm.MaxTokenBase))
	case len(c.LeaveCluster) > fsm.MaxNameLength:
		return fieldErr("LeaveCluster", "is %d bytes; a cluster ID is at most %d", len(c.LeaveCluster), fsm.MaxNameLength)
	}
	return nil
}

// CheckTimings returns the first broken rule on the durations, or nil; a
// bootstrap promise must outlast two RPCs (rpcTimeout each).
func (c Config) CheckTimings(rpcTimeout time.Duration) error {
	switch {
	case c.ServerStabilization <= 0:
		return fieldErr("ServerStabilization", "must be positive")
	case c.DeadServerStabilization <= 0:
		return fieldErr("DeadServerStabilization", "must be positive")
	case c.ReconcileInterval <= 0:
		return fieldErr("ReconcileInterval", "must be positive")
	case c.BootstrapPromiseTTL < 2*rpcTimeout:
		return fieldErr("BootstrapPromiseTTL", "is %v; must be at least 2 × RPCTimeout (%v)", c.BootstrapPromiseTTL, 2*rpcTimeout)
	}
	return nil
}
