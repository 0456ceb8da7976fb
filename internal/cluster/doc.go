// Package cluster forms and keeps a node's raft group: the gossip glue
// (this node's metadata, refusing members of a foreign cluster, joining the
// seeds with retries), the cluster ID, the bootstrap of a new cluster by
// an expected number of fresh nodes (a prepare/commit/abort round that
// forms exactly one cluster), formation progress, and, while the node
// leads, admission of gossip members to raft as non-voters and the
// autopilot promoter that keeps Voters voters (spread over zones) and
// replaces a lost voter before removing it. It also resolves the
// addresses a node advertises and turns join errors into hints.
//
// The part sees its neighbours only through Options: the raft handle, the
// gossip member, an RPC caller, the replica's view, a local proposer, the
// leader's record of who reached it, a clock and a logger. It never sees
// the coordinator, which wires it up and keeps the public API.
package cluster
