package coordinator

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/tlsfiles"
	"github.com/holdfast-go/holdfast/internal/walog"
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

// RaftConfig is Config.Raft: raft's timeouts, log compaction and the
// write-ahead log's segment size. The session TTL (Config.Session.TTL) must
// be at least three times the election and heartbeat timeouts.
type RaftConfig struct {
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
	// SnapshotThreshold is how many log entries raft keeps before it takes
	// a snapshot.
	SnapshotThreshold uint64
	// TrailingLogs is how many log entries are kept after a snapshot.
	TrailingLogs uint64
	// LogSegmentSize is the size of the write-ahead log's segment files,
	// each preallocated to it (0: 8 MiB; at least 64 KiB otherwise).
	// Smaller segments are compacted sooner and reserve less disk; a disk
	// that fills is noticed at the next segment.
	LogSegmentSize int64
}

// part is the raft node's timing (internal/raftnode); the two structs have
// the same fields, so a field added to one alone fails to compile here.
func (r RaftConfig) part() raftnode.Timing { return raftnode.Timing(r) }

// Config configures a Coordinator. Start from DefaultConfig or
// DefaultLocalConfig and set the node's own fields. New copies the Config
// and never writes to it.
type Config struct {
	// The node: its name, its data, and where it is reached.

	// NodeName names this node in the gossip pool; unique in the cluster.
	NodeName string
	// DataDir holds the node identity, the raft log and snapshots. A node
	// with a DataDir is voter-eligible; a node without one runs as a raft
	// non-voter on in-memory stores and catches up by snapshot. The raft
	// log is a write-ahead log under DataDir/raft/wal (fsynced once per
	// append); a DataDir written by a release before it keeps its bbolt log
	// (DataDir/raft/raft.db). A running node holds an exclusive lock on
	// DataDir/raft/LOCK, so a second node on the same DataDir fails in New.
	// A DataDir with a write-ahead log cannot be opened by a release older
	// than the log: it would start that node with an empty log.
	DataDir string
	// AllowRename lets New start on a DataDir last used under another
	// NodeName: the node keeps the data dir's identity (its raft server ID)
	// under the new name. Without it New refuses such a data dir with an
	// error naming both names, since a data dir reused by mistake would
	// otherwise take over another node's identity and vote.
	AllowRename bool
	// Zone is an optional failure-domain label, gossiped to other nodes.
	// The leader spreads voters over distinct zones as far as the
	// voter-eligible members allow, so that losing one zone keeps a quorum.
	Zone string
	// GossipAddr is the host:port gossip binds to (UDP and TCP). Port 0
	// picks a free port.
	GossipAddr string
	// AdvertiseGossipAddr is AdvertiseRPCAddr for gossip: the IP:port other
	// members reach this node's gossip at. The host must be an IP address.
	AdvertiseGossipAddr string
	// RPCAddr is the host:port of the one TCP listener carrying raft and
	// holdfast's RPC. Port 0 picks a free port.
	RPCAddr string
	// AdvertiseRPCAddr, if set, is the host:port other nodes dial instead
	// of the bound address, and the one Owner reports when ServiceAddr is
	// empty: for a node reached through another address than it binds (a
	// container, NAT). Port 0 means the bound port; an unspecified host
	// (0.0.0.0, ::) is refused. Empty while RPCAddr binds every interface:
	// an address of one of the node's interfaces, with a warning.
	AdvertiseRPCAddr string
	// ServiceAddr is the address applications reach this node's service
	// at; Owner returns it. Empty means the RPC address.
	ServiceAddr string
	// Join lists gossip addresses of existing members; a DNS name stands
	// for every address it resolves to (a Kubernetes headless Service:
	// every pod). Joining is retried with backoff while this node is alone
	// in the gossip pool; each failure is logged as a warning with a hint
	// (nothing listening, not a gossip port, other gossip keys).
	Join []string
	// RPCTimeout bounds each internal RPC.
	RPCTimeout time.Duration
	// ShutdownWithoutLeader bounds how long Shutdown and Leave wait for a
	// raft leader for the steps that must commit (the shard handoff, the
	// session's close, leaving the raft configuration): once no leader has
	// been known for this long, each such step is skipped with a log line
	// and the node stops as a crash would. 0 means
	// DefaultShutdownWithoutLeader (5s).
	ShutdownWithoutLeader time.Duration

	// What the node takes part in, one group per concern.

	// Cluster says how the cluster forms and how many voters it keeps.
	Cluster ClusterConfig
	// Session holds the session and lease timing: how long a holder may believe.
	Session SessionConfig
	// Shards configures shard ownership: the count, the handler and the balancer.
	Shards ShardConfig
	// Raft holds raft's timeouts and log compaction settings.
	Raft RaftConfig
	// Gossip holds memberlist's timing profile and the gossip encryption keys.
	Gossip GossipConfig

	// Security.

	// TLS enables mutual TLS on the RPC/raft port (see TLSConfig); New
	// refuses a Config without it unless Insecure is set.
	TLS *TLSConfig
	// Insecure lets New start without TLS: the RPC/raft port is then
	// plaintext, so anyone who can reach it can forge raft commands (take
	// any lease or shard, remove voters) and keyring calls. For tests and
	// demos on one machine (DefaultLocalConfig sets it); no effect with TLS.
	Insecure bool

	// Observability: metrics and logs go only where the caller says.

	// Registerer receives holdfast's metrics. Nil: metrics are created but
	// not registered.
	Registerer prometheus.Registerer
	// Logger receives all logs, raft's and memberlist's included. Nil
	// discards them.
	Logger *slog.Logger

	// Substitutes for tests.

	// Clock measures how long this node may believe in its leases; it must
	// count time the machine spends suspended. Nil: SystemClock().
	Clock Clock
	// Network carries raft and RPC (and gossip too when it implements
	// transport.GossipNetwork). Nil means real TCP (and UDP for gossip).
	Network transport.Network

	// logFS, set only by this package's tests (export_test.go), is the
	// file system of the raft write-ahead log (nil: the operating
	// system's): the simulation keeps each node's log in memory, where a
	// crash can lose what was not synced.
	logFS walog.FS
}

// DefaultConfig returns production defaults (LAN timings). The caller
// still sets NodeName, addresses, Join, DataDir and Cluster.BootstrapExpect, and
// TLS: New refuses a Config without TLS unless Insecure is set.
func DefaultConfig() Config {
	return Config{
		GossipAddr:            "0.0.0.0:7946",
		RPCAddr:               "0.0.0.0:7947",
		RPCTimeout:            5 * time.Second,
		ShutdownWithoutLeader: DefaultShutdownWithoutLeader,
		Cluster: ClusterConfig{Voters: 3, BootstrapExpect: 3, ServerStabilization: 10 * time.Second,
			DeadServerStabilization: 30 * time.Second, ReconcileInterval: 10 * time.Second, BootstrapPromiseTTL: 30 * time.Second,
			ReplicaFeed: true},
		Shards: ShardConfig{Count: 256, DrainTimeout: 5 * time.Second, JoinStabilization: 5 * time.Second,
			RebalanceDelay: 200 * time.Millisecond},
		Session: SessionConfig{TTL: 10 * time.Second, LeaseMargin: time.Second, MaxClockDrift: 0.01, ExpiryGrace: 2 * time.Second},
		Raft: RaftConfig{HeartbeatTimeout: time.Second, ElectionTimeout: time.Second, LeaderLeaseTimeout: 500 * time.Millisecond,
			CommitTimeout: 50 * time.Millisecond, SnapshotThreshold: 8192, TrailingLogs: 10240},
		Gossip: GossipConfig{Profile: GossipLAN},
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
	c.GossipAddr, c.RPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	c.Shards = ShardConfig{Count: 16, DrainTimeout: time.Second, JoinStabilization: time.Second, RebalanceDelay: 50 * time.Millisecond}
	c.Session.TTL, c.Session.LeaseMargin, c.Session.ExpiryGrace = 3*time.Second, 300*time.Millisecond, 600*time.Millisecond
	c.Raft = RaftConfig{HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond, CommitTimeout: 10 * time.Millisecond, SnapshotThreshold: 1024, TrailingLogs: 1024}
	c.Gossip.Profile = GossipLocal
	c.Cluster.ServerStabilization, c.Cluster.DeadServerStabilization = 1*time.Second, 2*time.Second
	c.Cluster.ReconcileInterval, c.Cluster.BootstrapPromiseTTL = 500*time.Millisecond, 10*time.Second
	c.RPCTimeout = 2 * time.Second
	c.ShutdownWithoutLeader = 2 * time.Second
	return c
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config;
// the message names the field.
var ErrInvalidConfig = errors.New("holdfast: invalid config")

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// configErr turns a part's configuration error (one naming a Config field)
// into an ErrInvalidConfig naming that field; other errors pass unchanged.
func configErr(err error) error {
	var fe interface{ ConfigField() (field, msg string) }
	if errors.As(err, &fe) {
		field, msg := fe.ConfigField()
		return fieldErr(field, "%s", msg)
	}
	return err
}

// check is one rule of validate: a field error when bad, else nil.
func check(bad bool, field, format string, args ...any) error {
	if bad {
		return fieldErr(field, format, args...)
	}
	return nil
}

// validate checks every field and the relations between them; the first
// rule broken, in order, is the error.
func (c *Config) validate() error {
	sh := c.Shards
	return cmp.Or(
		check(c.NodeName == "", "NodeName", "must be set"),
		check(len(c.NodeName) > 128, "NodeName", "longer than 128 bytes"),
		check(c.GossipAddr == "", "GossipAddr", "must be set"),
		check(c.RPCAddr == "", "RPCAddr", "must be set"),
		c.checkAddrs(),
		configErr(c.Cluster.part().CheckSize(c.DataDir != "")),
		check(sh.Count <= 0 || sh.Count > 1<<20, "Shards.Count", "is %d; must be between 1 and %d", sh.Count, 1<<20),
		check(math.IsNaN(sh.Weight) || math.IsInf(sh.Weight, 0) || sh.Weight < 0, "Shards.Weight", "is %v; must be a finite number >= 0", sh.Weight),
		check(sh.Epsilon < 0 || sh.Epsilon >= 1 || math.IsNaN(sh.Epsilon), "Shards.Epsilon", "is %v; must be in [0, 1)", sh.Epsilon),
		check(math.IsNaN(sh.Capacity) || math.IsInf(sh.Capacity, 0) || sh.Capacity < 0, "Shards.Capacity", "is %v; must be a finite number >= 0", sh.Capacity),
		check(sh.Capacity != 0 && sh.Weight != 0 && sh.Capacity != sh.Weight, "Shards.Capacity",
			"is %v but Shards.Weight is %v; they are one setting: set one of them", sh.Capacity, sh.Weight),
		check(math.IsNaN(sh.LoadRatio) || sh.LoadRatio != 0 && (sh.LoadRatio <= 1 || sh.LoadRatio >= 2), "Shards.LoadRatio", "is %v; must be in (1, 2) (0: 1.10)", sh.LoadRatio),
		check(sh.LoadMoves < 0, "Shards.LoadMoves", "is %d; must be >= 0", sh.LoadMoves),
		check(sh.LoadHalfLife < 0, "Shards.LoadHalfLife", "must not be negative"),
		c.checkTags(),
		check(len(c.ServiceAddr) > 256, "ServiceAddr", "longer than 256 bytes"),
		configErr(cluster.CheckAdvertise("AdvertiseRPCAddr", c.AdvertiseRPCAddr, false)),
		configErr(cluster.CheckAdvertise("AdvertiseGossipAddr", c.AdvertiseGossipAddr, true)),
		c.validateTimings(),
		configErr(keyring.CheckKeys(c.Gossip.Keys)),
		configErr(tlsfiles.Check(c.TLS.part(), c.Insecure, c.NodeName)),
	)
}

// validateTimings checks the durations of every group and their relations.
func (c *Config) validateTimings() error {
	r, s, sh := c.Raft, c.Session, c.Shards
	election := max(r.ElectionTimeout, r.HeartbeatTimeout)
	return cmp.Or(
		configErr(r.part().Check()),
		check(s.TTL < 3*election, "Session.TTL",
			"is %v; must be at least 3 × the raft election/heartbeat timeout (%v) so a leader change does not expire sessions", s.TTL, 3*election),
		check(s.MaxClockDrift < 0 || s.MaxClockDrift >= 0.5, "Session.MaxClockDrift", "is %v; must be in [0, 0.5)", s.MaxClockDrift),
		check(s.LeaseMargin <= 0 || s.LeaseMargin >= s.TTL/3, "Session.LeaseMargin",
			"is %v; must be positive and below Session.TTL/3 (%v)", s.LeaseMargin, s.TTL/3),
		check(s.ExpiryGrace < election, "Session.ExpiryGrace", "is %v; must be at least the raft election timeout (%v)", s.ExpiryGrace, election),
		check(sh.DrainTimeout <= 0, "Shards.DrainTimeout", "must be positive"),
		check(sh.JoinStabilization < 0, "Shards.JoinStabilization", "must not be negative"),
		check(sh.RebalanceDelay <= 0, "Shards.RebalanceDelay", "must be positive"),
		configErr(c.Cluster.part().CheckTimings(c.RPCTimeout)),
		check(c.RPCTimeout <= 0, "RPCTimeout", "must be positive"),
		check(c.ShutdownWithoutLeader < 0, "ShutdownWithoutLeader", "is %v; must not be negative (0: %v)", c.ShutdownWithoutLeader, DefaultShutdownWithoutLeader),
		configErr(r.part().CheckSnapshot()),
	)
}

// Clock measures how long this node may still believe in its leases. Now
// returns the time elapsed since an arbitrary fixed origin; it never goes
// back, and it must keep counting while the machine is suspended: a holder
// that resumes from suspend must see that the time its session had left is
// gone, as the raft leader does. Config.Clock replaces the default (tests
// use it to jump time).
type Clock = session.Clock

// SystemClock returns the clock holdfast uses when Config.Clock is nil: on
// Linux CLOCK_BOOTTIME, on macOS CLOCK_MONOTONIC (both count suspended
// time); elsewhere Go's monotonic clock, which may not count it.
func SystemClock() Clock { return session.SystemClock() }

// clockStep is how often a belief deadline re-reads the clock.
func (c *Coordinator) clockStep() time.Duration {
	return min(c.cfg.Session.LeaseMargin/2, 250*time.Millisecond)
}
