// Package raftnode hosts a node's raft server: its identity (the raft
// server ID kept in the data dir), its stores (a write-ahead log, or the
// bbolt log of an older data dir, with the stable store beside it and file
// snapshots, the data dir locked while open; or in-memory ones), the raft futures in flight (so that
// closing never waits on a future raft will not answer), and proposing a
// command in two ways named by what they wait for: Commit (until the
// command committed) and Accept (until raft on the leader has taken it
// in), each on this node when it leads, otherwise forwarded to the leader
// over the RPC transport, within the caller's budget. The leader's duties
// commit with CommitAsLeader; Forwards serves the leader's side of
// forwarding with it, bounded by a number of pending forwards,
// the consistent-read round (Reads: a quorum-confirmed commit index, the
// last command at or below it, the wait for the replica), the leader's
// duties per term (FollowLeadership) and since when no leader has been
// known (LeaderWatch). Raft runs on a transport without pipelining that
// answers the leader's idle commit-index repeats to a non-voter from the
// non-voter's last answer (see raftTransport).
//
// A Node gets what it needs through Options (configuration values, the RPC
// transport, the state machine, a logger, its lifetime context) and owns
// the goroutines it starts: Stop joins them.
package raftnode
