// Command demo shows, in one process and about half a minute, the failure
// holdfast is built for: a shard owner that stops (as under SIGSTOP) while
// it believes it owns its shards, and wakes up after the cluster has given
// them to others.
//
//	go run ./examples/demo [-nodes 3] [-shards 16] [-ttl 2s]
//
// It forms a cluster of -nodes nodes on loopback (real TCP, temporary data
// dirs). Every node runs a worker per shard it owns; the workers append to
// one shared SQLite file (WAL mode) with fenced writes: the write commits
// only if no larger token was accepted for the shard before (fence.SQL).
// One node also holds the named lease "auditor", which audits that file.
//
// The nodes run as a real deployment should: mutual TLS on the raft/RPC
// port, with certificates from a CA the demo makes in its own process
// (package certs; a cluster makes its files with holdfastctl cert), and
// encrypted gossip.
//
// Then it pauses a node that is not the raft leader: its workers stop
// between their lease check and their write, and its network stops (a
// pausable wrapper around transport.TCP given to holdfast as
// Config.Network), so its keepalives no longer reach the leader. The
// leader expires its session and gives its shards to other nodes with
// larger tokens. When the node resumes, its workers write with the tokens
// they hold, and the database refuses every one of them. Finally every
// node shuts down gracefully, handing its shards off, and the demo checks
// the file: it exits 1 if a write with a stale token was ever accepted.
package main
