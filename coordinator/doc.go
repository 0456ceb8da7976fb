// Package coordinator is holdfast's public API: one Coordinator per node of
// a cluster that coordinates itself.
//
// A Coordinator joins a gossip pool (memberlist), takes part in a raft group
// (as a voter if it has a DataDir, otherwise as a non-voter on in-memory
// stores), and holds a local replica of the replicated state, so reads never
// leave the process.
//
// # Vocabulary
//
// The cluster grants three kinds of things, each stamped with a fencing
// token, and the API uses the same words for all three:
//
//   - a Lease: one holder per name. Acquire blocks until this node holds it,
//     TryAcquire does not wait, Lease.Release gives it up. RunElection is a
//     leader election over a lease, with the callbacks of Kubernetes'
//     client-go (OnStartedLeading, OnStoppedLeading, OnNewLeader).
//   - a Permit: up to N holders of a semaphore name. AcquireSemaphore,
//     TryAcquireSemaphore, Permit.Release.
//   - a ShardLease: a shard, granted by the raft leader; this node's
//     ShardHandler is told when it gains one and when it must hand one off.
//
// Who holds something is always a Holder (node, identity, address, session,
// token), read from the local replica: Holder(name) for a lease,
// Semaphore(name) for a semaphore's permits, Owner(shard) for a shard. The
// word "leader" on its own means the raft leader (RaftLeader, ErrNoLeader,
// NoLeaderSince); the node an election chose is the lease's holder.
//
// # Forming a cluster
//
// Fresh voter-eligible nodes started with the same
// Config.Cluster.BootstrapExpect find each other by gossip; when that many of
// them see each other and none belongs to a cluster yet, they agree on one
// configuration and bootstrap raft with it (each node promises itself to one
// proposal at a time, so two bootstraps cannot both succeed). The first leader
// records a new cluster ID in the replicated state; from then on the ID
// travels in gossip metadata, nodes never bootstrap next to it, and members of
// another cluster are refused. New members join as raft non-voters; the leader
// keeps Config.Cluster.Voters voters, promoting a healthy eligible non-voter
// after Cluster.ServerStabilization, one change at a time. A failure never
// shrinks the configuration: a voter down for Cluster.DeadServerStabilization
// (gossip reports it dead and none of its RPCs reach the leader, or the leader
// cannot reach it) is demoted or removed only after a replacement has been
// promoted; with no replacement it keeps its vote and votes again as soon as
// it is back. With Config.Zone set, voters are spread over distinct zones.
// Health returns the group's fault tolerance and each voter's health as the
// leader judged it, on every node.
//
// Until a node is a member of a formed cluster it logs where formation
// stands ("bootstrap: 2 of 3 eligible nodes seen (n1, n2)") at once when
// that changes and every FormationLogInterval; Formation returns the same,
// Ready's error includes it, and WaitReady waits for readiness. A failed
// join is logged as a warning with a hint (nothing listening, not a gossip
// port) and retried with backoff while the node is alone. Nodes reached
// through another address than they bind set Config.AdvertiseRPCAddr and
// AdvertiseGossipAddr.
//
// # Sessions, leases and tokens
//
// Each node keeps one session in the replicated state, renewed by keepalives
// to the raft leader every Session.TTL/3 (keepalives are not written to the
// raft log). Named leases (Acquire, TryAcquire, and RunElection, which
// runs callbacks for each term and acquires again after a loss) and
// semaphore permits (AcquireSemaphore: up to N holders of a name, each
// permit with its own token, believed like a lease) hang off the session.
// Guarantees:
//
//   - Only the leader expires a session, by a committed command, once its
//     deadline on the leader's monotonic clock has passed. A keepalive is
//     answered only after a confirmation round that started after it arrived
//     shows a quorum of voters still in the leader's term. A new leader
//     extends every deadline by Session.TTL + Session.ExpiryGrace.
//   - A holder believes it holds a lease until the instant computed from its
//     last answered keepalive's send time: sent + TTL·(1 − MaxClockDrift) −
//     LeaseMargin (fields of Config.Session). At that instant its lease
//     contexts are cancelled by a local timer, before the leader can expire
//     the session and grant the lease to someone else. The instant is measured
//     on Config.Clock, which counts time the machine spends suspended
//     (CLOCK_BOOTTIME on Linux).
//   - A lease request whose caller stops waiting (its context ends) leaves
//     nothing behind: the node settles it in the background by committing a
//     release that names the request, and Release always delivers
//     its release. A command that reaches the leader late or twice changes
//     nothing its own request did not create.
//   - Every grant takes a new fencing token, strictly increasing per name
//     across leader changes, restarts and snapshot restores.
//
// Not guaranteed: mutual exclusion when clocks run at rates that differ by
// more than Session.MaxClockDrift, or when a process is paused between a
// successful Checkpoint and its write. Only the fencing token closes those
// windows: a resource that cannot compare tokens (package fence) cannot be
// protected. Clock jumps do not matter: every duration is measured on the
// monotonic clock.
//
// # Shards
//
// The cluster has Config.Shards.Count shards, fixed at creation; ShardFor
// maps a key to its shard with a stable hash. The raft leader assigns shards to
// live, undrained sessions (balanced, sticky, rate-limited; see package
// shardown) and drives every handoff: revoke, the owner's
// ShardHandler.Release drains, the owner commits the release, and the shard
// is granted to the next owner with a new token, whose ShardHandler.Acquire
// runs under the lease's context. A shard is never granted while its
// previous owner may still believe it holds it: the owner released it, its
// session expired, or the revoke was committed a full Session.TTL earlier
// (keepalive answers carry the leader's applied index, and a node extends
// no belief before its replica has seen that index, so a revoked shard
// stops being extended and its belief ends by the owner's own timer).
// Owner reads the local replica without locks or allocation; Owned lists
// this node's ShardLeases; Watch streams table versions; Drain hands every
// shard off for maintenance and Shutdown does so before leaving. A read
// after Sync reflects every change the leader had committed when Sync was
// called; NoLeaderSince tells when the replica may be stale.
//
// # Gossip encryption
//
// With Config.Gossip.Keys set, all gossip is encrypted and authenticated
// (AES-GCM; the first key encrypts, all decrypt): a node without one of the
// keys never joins. Rotate without downtime with InstallGossipKey(new),
// UseGossipKey(new), RemoveGossipKey(old), each applied to every live member
// over RPC (inside mutual TLS: the key is in the request). A node with a
// DataDir persists its keyring there after every step and starts from it
// while its Config.Gossip.Keys is unchanged, so a node restarted after a
// rotation rejoins without a configuration change; a node without a
// DataDir keeps it in memory (see InstallGossipKey).
//
// # Security
//
// New refuses a Config without TLS unless Config.Insecure is set
// (DefaultLocalConfig sets it, for tests and demos): on a plaintext RPC
// port anyone can forge raft commands. With TLS every raft and RPC
// connection is mutual TLS against the cluster's CA, and the leader adds a
// gossip member to the raft configuration only after a TLS handshake with
// its RPC address has shown a certificate of that CA naming it (gossip
// alone proves nothing). `holdfastctl cert` makes the CA, the node
// certificates and a gossip key; the repository's docs/SECURITY.md tells
// the whole story.
//
// # Identity
//
// A node's raft server ID is an identity generated once and kept in its
// data dir, not its name. A node that comes back under the same name with an
// empty data dir is a new server: it joins anew, is promoted in the old
// entry's place, and only then is the old entry removed. Raft connections
// addressed to the old identity are refused by the new process, so its
// empty log can never stand in for the old voter's vote.
//
// # Shutdown
//
// Shutdown(ctx) is graceful: the node's shards are handed off (when another
// node can take them), its session is closed, leadership is handed to
// another voter, the node removes itself from the raft configuration
// (unless it is the last voter) and leaves the gossip pool. Close stops at
// once, like a crash. Both wait for every goroutine the Coordinator
// started.
package coordinator
