package coordinator

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/transport"
)

// GossipProfile selects memberlist's timing defaults.
type GossipProfile int

const (
	// GossipLAN is memberlist's LAN profile: the default for production.
	GossipLAN GossipProfile = iota
	// GossipLocal is memberlist's local profile: fast failure detection for
	// tests and demos on one machine.
	GossipLocal
)

// RaftTimings are the raft timeouts. The session TTL must be long compared
// with them (see Config.validate).
type RaftTimings struct {
	// HeartbeatTimeout is how long a follower waits without contact from the
	// leader before it starts an election.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits before a new election.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without contact
	// from a quorum. It must not exceed HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout bounds how long an idle leader waits before it sends
	// heartbeats carrying the commit index.
	CommitTimeout time.Duration
}

// Config configures a Coordinator. Start from DefaultConfig or
// DefaultLocalConfig and set the node's own fields. New copies the Config
// and never writes to it.
type Config struct {
	// NodeName names this node in the gossip pool; unique in the cluster.
	NodeName string
	// GossipAddr is the host:port gossip binds to (UDP and TCP). Port 0
	// picks a free port.
	GossipAddr string
	// RPCAddr is the host:port of the one TCP listener carrying raft and
	// holdfast's RPC. Port 0 picks a free port.
	RPCAddr string
	// AdvertiseRPCAddr, if set, is the RPC address (host:port) other nodes
	// dial instead of the bound one, and the address Owner reports when
	// ServiceAddr is empty: set it when the node is reached through another
	// address than it binds (a container, NAT). Port 0 means the bound
	// port. An unspecified host (0.0.0.0, ::) is refused. When it is empty
	// and RPCAddr binds every interface, the node advertises an address of
	// one of its interfaces and logs a warning saying so.
	AdvertiseRPCAddr string
	// AdvertiseGossipAddr is AdvertiseRPCAddr for gossip: the IP:port other
	// members reach this node's gossip at. The host must be an IP address.
	AdvertiseGossipAddr string
	// Join lists gossip addresses of existing members. A host that is a DNS
	// name stands for every address it resolves to (a Kubernetes headless
	// Service: every pod), and each is contacted. Joining is retried in the
	// background, with backoff, while this node is alone in the gossip
	// pool; each failure is logged as a warning with a hint (nothing
	// listening, not a gossip port, other gossip keys), repeated with a
	// backoff of its own.
	Join []string
	// DataDir holds the node identity, the raft log and snapshots. A node
	// with a DataDir is voter-eligible; a node without one runs as a raft
	// non-voter on in-memory stores and catches up by snapshot.
	DataDir string
	// AllowRename lets New start on a DataDir last used under another
	// NodeName: the node keeps the data dir's identity (its raft server ID)
	// under the new name. Without it New refuses such a data dir with an
	// error naming both names, since a data dir reused by mistake would
	// otherwise take over another node's identity and vote.
	AllowRename bool
	// BootstrapExpect is the number of voter-eligible nodes that must see
	// each other before a new cluster is bootstrapped; 0 means never
	// bootstrap, only join an existing cluster. At most Voters.
	BootstrapExpect int
	// Voters is the number of voters the cluster keeps: 1, 3 or 5. A voter
	// that fails keeps its vote until a healthy eligible node has been
	// promoted in its place; with no such node it stays a voter.
	Voters int
	// Shards is the fixed number of shards, recorded when the cluster is
	// created. Positive.
	Shards int
	// Handler is told when this node starts owning a shard and when the
	// leader asks it to hand one off. Nil: shards are owned (and visible in
	// Owned and Owner) without callbacks.
	Handler ShardHandler
	// ShardWeight is this node's relative shard capacity: 0 means 1.
	ShardWeight float64
	// ServiceAddr is the address applications reach this node's service
	// at; Owner returns it. Empty means the RPC address.
	ServiceAddr string
	// ShardDrainTimeout bounds Handler.Release, the drain of a shard being
	// handed off; the release is committed when it returns or times out.
	ShardDrainTimeout time.Duration
	// ShardJoinStabilization is how long a new session must have existed
	// before the leader hands it shards (so a flapping node does not pull
	// shards back and forth).
	ShardJoinStabilization time.Duration
	// ShardMaxMoves is the most rebalancing handoffs in flight at once; 0
	// means max(1, Shards/16). Grants of free shards and the handoffs of a
	// drained node are not limited.
	ShardMaxMoves int
	// ShardEpsilon is the balance slack: every node owns within
	// ceil(S·w/W·(1+ε)) shards. 0 means 0.05.
	ShardEpsilon float64
	// ShardRebalanceDelay coalesces bursts of changes: the leader replans
	// this long after a change (and every ReconcileInterval).
	ShardRebalanceDelay time.Duration
	// SessionTTL is how long a node's session lives without a keepalive
	// answered by the leader.
	SessionTTL time.Duration
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
	// Raft holds the raft timeouts.
	Raft RaftTimings
	// Gossip selects memberlist's timing profile.
	Gossip GossipProfile
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
	// RPCTimeout bounds each internal RPC.
	RPCTimeout time.Duration
	// SnapshotThreshold is how many log entries raft keeps before it takes
	// a snapshot; TrailingLogs how many it keeps after one.
	SnapshotThreshold uint64
	// TrailingLogs is how many log entries are kept after a snapshot.
	TrailingLogs uint64
	// Zone is an optional failure-domain label, gossiped to other nodes.
	// The leader spreads voters over distinct zones as far as the
	// voter-eligible members allow, so that losing one zone keeps a quorum.
	Zone string
	// Network carries raft and RPC (and gossip too when it implements
	// transport.GossipNetwork). Nil means real TCP (and UDP for gossip).
	Network transport.Network
	// GossipKeys are the AES keys (16, 24 or 32 bytes each) that encrypt and
	// authenticate gossip: the first encrypts, all of them decrypt. Empty:
	// gossip in clear text. See gossipkeys.go for rotation.
	GossipKeys [][]byte
	// TLS enables mutual TLS on the RPC/raft port. It is required: New
	// refuses a Config without TLS unless Insecure is set. Make a CA and
	// node certificates with `holdfastctl cert create-ca` and
	// `holdfastctl cert create-node NAME` (see TLSConfig).
	TLS *TLSConfig
	// Insecure lets New start without TLS: the RPC/raft port is plaintext
	// and unauthenticated, so anyone who can reach it can forge raft
	// commands (grant themselves any lease or shard, remove voters) and
	// keyring calls. Meant for tests and demos on one machine only;
	// DefaultLocalConfig sets it. It has no effect when TLS is set.
	Insecure bool
	// Clock measures how long this node may believe in its leases; it must
	// count time the machine spends suspended. Nil: SystemClock().
	Clock Clock
	// Registerer receives holdfast's metrics. Nil: metrics are created but
	// not registered.
	Registerer prometheus.Registerer
	// Logger receives all logs, raft's and memberlist's included. Nil
	// discards them.
	Logger *slog.Logger
}

// DefaultConfig returns production defaults (LAN timings). The caller
// still sets NodeName, addresses, Join, DataDir and BootstrapExpect, and
// TLS: New refuses a Config without TLS unless Insecure is set.
func DefaultConfig() Config {
	return Config{
		GossipAddr:      "0.0.0.0:7946",
		RPCAddr:         "0.0.0.0:7947",
		Voters:          3,
		BootstrapExpect: 3,
		Shards:          256,

		ShardDrainTimeout:      5 * time.Second,
		ShardJoinStabilization: 5 * time.Second,
		ShardRebalanceDelay:    200 * time.Millisecond,
		SessionTTL:             10 * time.Second,
		LeaseMargin:            1 * time.Second,
		MaxClockDrift:          0.01,
		ExpiryGrace:            2 * time.Second,
		Raft: RaftTimings{
			HeartbeatTimeout:   1000 * time.Millisecond,
			ElectionTimeout:    1000 * time.Millisecond,
			LeaderLeaseTimeout: 500 * time.Millisecond,
			CommitTimeout:      50 * time.Millisecond,
		},
		Gossip:                  GossipLAN,
		ServerStabilization:     10 * time.Second,
		DeadServerStabilization: 30 * time.Second,
		ReconcileInterval:       10 * time.Second,
		BootstrapPromiseTTL:     30 * time.Second,
		RPCTimeout:              5 * time.Second,
		SnapshotThreshold:       8192,
		TrailingLogs:            10240,
	}
}

// DefaultLocalConfig returns fast timings for tests and demos on one
// machine: loopback addresses with OS-chosen ports, sub-second raft
// timeouts, short stabilization times. Still safe on a loaded 2-core host.
//
// It sets Insecure, so a node runs without TLS unless Config.TLS is set:
// fine on loopback in a test, never for a service on a network.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.Insecure = true
	c.GossipAddr = "127.0.0.1:0"
	c.RPCAddr = "127.0.0.1:0"
	c.Shards = 16
	c.ShardDrainTimeout = 1 * time.Second
	c.ShardJoinStabilization = 1 * time.Second
	c.ShardRebalanceDelay = 50 * time.Millisecond
	c.SessionTTL = 3 * time.Second
	c.LeaseMargin = 300 * time.Millisecond
	c.ExpiryGrace = 600 * time.Millisecond
	c.Raft = RaftTimings{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		CommitTimeout:      10 * time.Millisecond,
	}
	c.Gossip = GossipLocal
	c.ServerStabilization = 1 * time.Second
	c.DeadServerStabilization = 2 * time.Second
	c.ReconcileInterval = 500 * time.Millisecond
	c.BootstrapPromiseTTL = 10 * time.Second
	c.RPCTimeout = 2 * time.Second
	c.SnapshotThreshold = 1024
	c.TrailingLogs = 1024
	return c
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config;
// the message names the field.
var ErrInvalidConfig = errors.New("holdfast: invalid config")

func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
}

// validate checks every field and the relations between them.
func (c *Config) validate() error {
	switch {
	case c.NodeName == "":
		return fieldErr("NodeName", "must be set")
	case len(c.NodeName) > 128:
		return fieldErr("NodeName", "longer than 128 bytes")
	case c.GossipAddr == "":
		return fieldErr("GossipAddr", "must be set")
	case c.RPCAddr == "":
		return fieldErr("RPCAddr", "must be set")
	case c.Voters != 1 && c.Voters != 3 && c.Voters != 5:
		return fieldErr("Voters", "is %d; must be 1, 3 or 5", c.Voters)
	case c.BootstrapExpect < 0 || c.BootstrapExpect > c.Voters:
		return fieldErr("BootstrapExpect", "is %d; must be between 0 and Voters (%d)", c.BootstrapExpect, c.Voters)
	case c.BootstrapExpect > 0 && c.DataDir == "":
		return fieldErr("BootstrapExpect", "is %d but DataDir is empty: only voter-eligible nodes bootstrap", c.BootstrapExpect)
	case c.Shards <= 0 || c.Shards > 1<<20:
		return fieldErr("Shards", "is %d; must be between 1 and %d", c.Shards, 1<<20)
	case math.IsNaN(c.ShardWeight) || math.IsInf(c.ShardWeight, 0) || c.ShardWeight < 0:
		return fieldErr("ShardWeight", "is %v; must be a finite number >= 0", c.ShardWeight)
	case c.ShardEpsilon < 0 || c.ShardEpsilon >= 1 || math.IsNaN(c.ShardEpsilon):
		return fieldErr("ShardEpsilon", "is %v; must be in [0, 1)", c.ShardEpsilon)
	case c.ShardMaxMoves < 0:
		return fieldErr("ShardMaxMoves", "is %d; must be >= 0", c.ShardMaxMoves)
	case len(c.ServiceAddr) > 256:
		return fieldErr("ServiceAddr", "longer than 256 bytes")
	}
	if err := validateAdvertise("AdvertiseRPCAddr", c.AdvertiseRPCAddr, false); err != nil {
		return err
	}
	if err := validateAdvertise("AdvertiseGossipAddr", c.AdvertiseGossipAddr, true); err != nil {
		return err
	}
	if err := c.validateTimings(); err != nil {
		return err
	}
	if err := c.validateGossipKeys(); err != nil {
		return err
	}
	return c.validateTLS()
}

func (c *Config) validateTimings() error {
	r := c.Raft
	switch {
	case r.HeartbeatTimeout < 5*time.Millisecond:
		return fieldErr("Raft.HeartbeatTimeout", "is %v; must be at least 5ms", r.HeartbeatTimeout)
	case r.ElectionTimeout < 5*time.Millisecond:
		return fieldErr("Raft.ElectionTimeout", "is %v; must be at least 5ms", r.ElectionTimeout)
	case r.LeaderLeaseTimeout < 5*time.Millisecond || r.LeaderLeaseTimeout > r.HeartbeatTimeout:
		return fieldErr("Raft.LeaderLeaseTimeout", "is %v; must be between 5ms and HeartbeatTimeout (%v)", r.LeaderLeaseTimeout, r.HeartbeatTimeout)
	case r.CommitTimeout <= 0:
		return fieldErr("Raft.CommitTimeout", "must be positive")
	case c.SessionTTL < 3*max(r.ElectionTimeout, r.HeartbeatTimeout):
		return fieldErr("SessionTTL", "is %v; must be at least 3 × the raft election/heartbeat timeout (%v) so a leader change does not expire sessions",
			c.SessionTTL, 3*max(r.ElectionTimeout, r.HeartbeatTimeout))
	case c.MaxClockDrift < 0 || c.MaxClockDrift >= 0.5:
		return fieldErr("MaxClockDrift", "is %v; must be in [0, 0.5)", c.MaxClockDrift)
	case c.LeaseMargin <= 0 || c.LeaseMargin >= c.SessionTTL/3:
		return fieldErr("LeaseMargin", "is %v; must be positive and below SessionTTL/3 (%v)", c.LeaseMargin, c.SessionTTL/3)
	case c.ExpiryGrace < max(r.ElectionTimeout, r.HeartbeatTimeout):
		return fieldErr("ExpiryGrace", "is %v; must be at least the raft election timeout (%v)", c.ExpiryGrace, max(r.ElectionTimeout, r.HeartbeatTimeout))
	case c.ShardDrainTimeout <= 0:
		return fieldErr("ShardDrainTimeout", "must be positive")
	case c.ShardJoinStabilization < 0:
		return fieldErr("ShardJoinStabilization", "must not be negative")
	case c.ShardRebalanceDelay <= 0:
		return fieldErr("ShardRebalanceDelay", "must be positive")
	case c.ServerStabilization <= 0:
		return fieldErr("ServerStabilization", "must be positive")
	case c.DeadServerStabilization <= 0:
		return fieldErr("DeadServerStabilization", "must be positive")
	case c.ReconcileInterval <= 0:
		return fieldErr("ReconcileInterval", "must be positive")
	case c.BootstrapPromiseTTL < 2*c.RPCTimeout:
		return fieldErr("BootstrapPromiseTTL", "is %v; must be at least 2 × RPCTimeout (%v)", c.BootstrapPromiseTTL, 2*c.RPCTimeout)
	case c.RPCTimeout <= 0:
		return fieldErr("RPCTimeout", "must be positive")
	case c.SnapshotThreshold == 0:
		return fieldErr("SnapshotThreshold", "must be positive")
	}
	return nil
}
