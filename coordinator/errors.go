package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

var (
	// ErrShutdown is returned by calls made after Shutdown or Close began.
	ErrShutdown = wire.ErrShutdown
	// ErrNoLeader is returned when a write needs the raft leader and none is
	// known (an election is under way or quorum is lost).
	ErrNoLeader = wire.ErrNoLeader
	// ErrLeaveRefused is returned by Leave when the node may not leave the
	// raft configuration: too few voters would remain and no node can
	// replace it (without LeaveOptions.Force), the remaining healthy voters
	// could not commit its removal, or it is the last voter. The node is
	// left running.
	ErrLeaveRefused = wire.ErrLeaveRefused
	// ErrDuplicateName is returned by New when another live node already
	// uses this node's name.
	ErrDuplicateName = errors.New("holdfast: node name already in use")
	// ErrForeignCluster is returned by New when this node's data dir
	// belongs to another cluster than the one its Join seeds belong to (the
	// error names both, and Config.Cluster.LeaveCluster, which makes the
	// node leave its cluster). Nodes answer it, too, to calls and raft
	// traffic from nodes of another cluster.
	ErrForeignCluster = wire.ErrForeignCluster
	// ErrLeaseHeld is returned by TryAcquire when another node holds the
	// lease.
	ErrLeaseHeld = wire.ErrLeaseHeld
	// ErrLeaseLost is the cause of a lease's end when it ended for any reason
	// but Release: its session's belief lapsed, the session expired, or the
	// lease went to another holder. Lease.Checkpoint wraps it.
	ErrLeaseLost = wire.ErrLeaseLost
	// ErrLeaseExpiring is returned by Lease.Checkpoint when less than the
	// margin is left (see *ExpiringError for how much).
	ErrLeaseExpiring = errors.New("holdfast: lease about to expire")
	// ErrRevoked is the cause of a shard lease's end when this node handed
	// the shard off at the leader's request (rebalancing, Drain, Shutdown).
	ErrRevoked = wire.ErrRevoked
	// ErrReleased is the cause of a lease's end after Release.
	ErrReleased = wire.ErrReleased
	// ErrSessionExpired is the cause when this node's belief in its session
	// lapsed (no keepalive answered in time) or the leader expired it.
	ErrSessionExpired = session.ErrExpired
)

// ExpiringError is returned by Lease.Checkpoint when the time left is below
// the margin. It wraps ErrLeaseExpiring.
type ExpiringError struct {
	Remaining, Margin time.Duration
}

// Error says how long the lease had left and the margin it was held to,
// after ErrLeaseExpiring's text.
func (e *ExpiringError) Error() string {
	return fmt.Sprintf("%s: %v left, margin %v", ErrLeaseExpiring, e.Remaining, e.Margin)
}

// Is makes errors.Is(err, ErrLeaseExpiring) true.
func (e *ExpiringError) Is(target error) bool { return target == ErrLeaseExpiring }

// ConfigError is the error New returns for a bad Config: the field at
// fault, by its path in Config ("Session.TTL", "Join[1]"), and what is
// wrong with it. It wraps ErrInvalidConfig, and its text is
// "holdfast: invalid config: FIELD: MSG". An application that maps Config
// fields to its own flags or settings (as the ledger example maps them to
// its command-line flags) reads Field and Msg with errors.As.
type ConfigError struct {
	// Field is the field's path in Config.
	Field string
	// Msg says what is wrong with it, and often what to set instead.
	Msg string
}

// Error is ErrInvalidConfig's text, the field at fault and what is wrong
// with it.
func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// checkAddrs checks the syntax of every address in c before anything
// binds or dials (see cluster.CheckAddrs).
func (c *Config) checkAddrs() error {
	return configErr(cluster.CheckAddrs(cluster.Addrs{GossipAddr: c.GossipAddr, RPCAddr: c.RPCAddr, AdvertiseRPCAddr: c.AdvertiseRPCAddr,
		AdvertiseGossipAddr: c.AdvertiseGossipAddr, Join: c.Join, InMemory: c.Network != nil}))
}

// ForeignClusterError is New's refusal of a data dir that belongs to
// another cluster than the one its Join seeds belong to. It wraps
// ErrForeignCluster.
type ForeignClusterError struct {
	// DataDir is the node's data dir; Cluster the cluster it belongs to.
	DataDir, Cluster string
	// SeedsCluster is the cluster of Member, a member of the seeds' pool.
	SeedsCluster, Member string
}

// Error names the two clusters and the member of the seeds' pool that
// showed the second, and says how to leave one cluster for the other or
// how to point Join at the node's own cluster.
func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("%v: DataDir %s belongs to cluster %s, but %s, a member of the Join seeds' pool, belongs to cluster %s. "+
		"To make this node leave cluster %s and join %s as a new node, set Config.Cluster.LeaveCluster to %q "+
		"(its raft state and identity are moved aside); or give Join the seeds of cluster %s",
		ErrForeignCluster, e.DataDir, e.Cluster, e.Member, e.SeedsCluster, e.Cluster, e.SeedsCluster, e.Cluster, e.Cluster)
}

// Unwrap makes errors.Is(err, ErrForeignCluster) true.
func (e *ForeignClusterError) Unwrap() error { return ErrForeignCluster }

// foreignClusterErr is New's error for a data dir of another cluster than
// the seeds'.
func foreignClusterErr(dataDir string, fe *cluster.ForeignClusterError) error {
	return &ForeignClusterError{DataDir: dataDir, Cluster: fe.Ours, SeedsCluster: fe.Theirs, Member: fe.Member}
}
