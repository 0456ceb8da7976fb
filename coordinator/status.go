package coordinator

import (
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/transport"
)

// RaftState is this node's role in the raft group.
type RaftState = raftnode.State

// The raft roles.
const (
	StateFollower  = raftnode.StateFollower
	StateCandidate = raftnode.StateCandidate
	StateLeader    = raftnode.StateLeader
	StateShutdown  = raftnode.StateShutdown
)

// Suffrage is a member's place in the raft configuration.
type Suffrage = cluster.Suffrage

// The suffrages.
const (
	SuffrageVoter    = cluster.SuffrageVoter
	SuffrageNonVoter = cluster.SuffrageNonVoter
	SuffrageNone     = cluster.SuffrageNone // not (yet) in the raft configuration
)

// MemberState is what gossip says of a member.
type MemberState = cluster.MemberState

// The member states.
const (
	MemberAlive   = cluster.MemberAlive
	MemberSuspect = cluster.MemberSuspect
	MemberFailed  = cluster.MemberFailed
	MemberLeft    = cluster.MemberLeft
)

// Member describes one node as this node sees it: its name, ID (identity
// and raft server ID), addresses, gossip State and since when (on this
// node's clock), whether it is voter-Eligible (has a data dir), its
// Suffrage, ClusterID and Zone.
type Member = cluster.Member

// NodeInfo identifies a node.
type NodeInfo struct {
	Name    string
	ID      string
	RPCAddr string
}

// RaftState returns this node's current raft role.
func (c *Coordinator) RaftState() RaftState { return raftnode.StateOf(c.raft.State()) }

// RaftLeader returns the current raft leader as this node knows it, and
// false when no leader is known.
func (c *Coordinator) RaftLeader() (NodeInfo, bool) {
	a, id := c.node.LeaderWithID()
	if a == "" {
		return NodeInfo{}, false
	}
	addr, _, _ := transport.SplitRaftAddress(a)
	return NodeInfo{ID: string(id), RPCAddr: addr, Name: c.cluster.NameOf(string(id))}, true
}

// AppliedIndex returns the raft index of the last entry applied to this
// node's replica.
func (c *Coordinator) AppliedIndex() uint64 { return c.fsm.View().Index() }

// Members lists every node gossip knows of (failed and left ones until
// gossip forgets them), sorted by name, with each one's raft suffrage. A
// member of the raft configuration that gossip does not know is not listed.
func (c *Coordinator) Members() []Member { return c.cluster.MemberList() }

// Voters returns the raft IDs of the current voters.
func (c *Coordinator) Voters() []string { return c.cluster.Voters() }

// NonVoters returns the raft IDs of the current non-voters: the raft
// configuration's other members, whether gossip knows them or not.
func (c *Coordinator) NonVoters() []string { return c.cluster.NonVoters() }

// LastToken returns the last fencing token the cluster issued, as this
// node's replica knows it.
func (c *Coordinator) LastToken() uint64 { return c.fsm.View().LastToken() }

// TokenBase returns the value the cluster's tokens started above: the
// larger of the creating leader's wall clock in microseconds and
// Cluster.TokenFloor at creation; 0 for a cluster created by an earlier
// release, and before this node's replica knows the cluster. LastToken −
// TokenBase is the number of grants since the cluster was created.
func (c *Coordinator) TokenBase() uint64 { return c.fsm.View().Cluster().TokenBase() }

// ClusterCreated returns the creating leader's wall clock when the cluster
// was created; false for a cluster created by an earlier release, and
// before this node's replica knows the cluster.
func (c *Coordinator) ClusterCreated() (time.Time, bool) {
	us := c.fsm.View().Cluster().Created
	if us <= 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}
