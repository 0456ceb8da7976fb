// Package coordinator is holdfast's public API: one Coordinator per node of
// a cluster that coordinates itself, embedded in the service binary.
//
// A Coordinator joins a gossip pool, takes part in a raft group (as a voter
// if it has a DataDir, otherwise as a non-voter on in-memory stores), and
// holds a local replica of the replicated state, so reads never leave the
// process. Start from DefaultConfig (or DefaultLocalConfig for tests and
// demos), call New, wait with WaitReady, and stop with Shutdown: it hands
// the node's shards off, closes its session, hands raft leadership on and
// leaves gossip, but a voter keeps its place in the raft configuration, so
// that a restart gets its vote back at once (a node that never returns is
// replaced by an eligible node under the dead-voter rule). Leave takes the
// node out of the raft configuration for good (a replacement voter promoted
// first) and then stops it. Close stops at once, like a crash. All three
// wait for every goroutine New started.
//
// # One node, to try it
//
// DefaultLocalConfig is for one machine: loopback addresses with free
// ports, fast timings, and Insecure set (no TLS). A cluster of one node
// needs a DataDir (only a node with one can vote and form a cluster) and
// one voter:
//
//	cfg := coordinator.DefaultLocalConfig()
//	cfg.NodeName = "n1"
//	cfg.DataDir = dir // a directory of its own, kept across restarts
//	cfg.Cluster.Voters, cfg.Cluster.BootstrapExpect = 1, 1
//	c, err := coordinator.New(cfg)
//	if err != nil {
//		return err // a *ConfigError names the field: "Cluster.BootstrapExpect: is 3 but DataDir is empty ..."
//	}
//	defer c.Shutdown(context.Background())
//	if err := c.WaitReady(ctx); err != nil { // the cluster formed, this node has a session
//		return err
//	}
//	l, err := c.Acquire(ctx, "scheduler", coordinator.WithValue("n1 at :8080"))
//
// Three such nodes, each with its own DataDir, BootstrapExpect 3 (and
// Voters 3, the default) and Join naming another's GossipAddr, form a
// three-voter cluster; the README's quick start runs one with TLS.
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
//     ShardHandler is told when it gains one (Serve) and when it must hand one
//     off (HandOff).
//
// Who holds something is always a Holder (its Node, address, session,
// token), read from the local replica: Holder(name) for a lease,
// SemaphoreHolders(name) for a semaphore's permits, Owner(shard) for a
// shard. A node is always named by a Node (name and identity): a Holder's,
// a Member's, the raft leader's. The word "leader" on its own means the raft
// leader (RaftLeader, ErrNoLeader, NoLeaderSince); the node an election
// chose is the lease's holder.
//
// # What is guaranteed
//
// Every grant takes a new fencing token, strictly increasing per name and
// per shard across leader changes, restarts and snapshot restores. A node
// believes it holds a lease, permit or shard until an instant computed from
// its last keepalive answered by the leader (Config.Session: TTL,
// MaxClockDrift, LeaseMargin); then the lease's context is cancelled by a
// local timer, before the leader can grant it to anyone else. Beliefs are
// measured on Config.Clock, which counts time the machine spends
// suspended. A shard is never granted while its previous owner may still
// believe it holds it. A caller that stops waiting leaves nothing behind.
//
// Not guaranteed: mutual exclusion when clocks run at rates that differ by
// more than Session.MaxClockDrift, or when a process is paused between a
// successful Checkpoint and its write. Only the fencing token closes those
// windows: protect a resource by having it compare tokens (package fence).
//
// Reads (Holder, Owner, Owned, Table) come from the local replica; a read
// after Sync reflects every change the leader had committed when Sync was
// called, and NoLeaderSince tells when the replica may be stale.
//
// # Forming and securing a cluster
//
// Fresh voter-eligible nodes started with the same
// Config.Cluster.BootstrapExpect find each other by gossip and bootstrap
// one cluster; later nodes join it, and the leader keeps
// Config.Cluster.Voters voters (Formation and Health tell how it stands).
// New refuses a Config without TLS unless Config.Insecure is set;
// Config.Gossip.Keys encrypts gossip, and InstallGossipKey, UseGossipKey
// and RemoveGossipKey rotate the keys without downtime. `holdfastctl cert`
// makes the CA, the node certificates and a gossip key.
//
// The repository's docs/ARCHITECTURE.md tells how it all works (the lease
// protocol, shard handoffs, formation and voters, the parts of this
// package) and docs/SECURITY.md what is trusted.
package coordinator
