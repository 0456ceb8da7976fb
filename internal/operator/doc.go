// Package operator carries out an operator's actions on the cluster (the
// coordinator's Operate): it passes each one to the raft leader, retrying
// while no leader is known or it moves; on the leader it logs who asked
// and carries the action out (a drain or undrain of a node, the release of
// a lease's grant, a leadership step-down, the removal of a server from
// the raft configuration, a shard pin, unpin or move with the placement
// rules checked, a placement rule set or cleared, a shard plan); and on the node an action is
// about it plays that node's part (Local requests).
//
// The part sees its neighbours only through Options: an RPC caller, the
// raft leader's address, the gossip members, the replica's view, a
// proposer and a leader's commit, the sessions the leader is expiring,
// the balancer's plan, the node's own drain and lease release, and the cluster part's
// decommission. It never sees the coordinator, which validates the
// operator's request and keeps the public API.
package operator
