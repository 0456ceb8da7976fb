package raftnode

import (
	"strings"

	"github.com/hashicorp/raft"
)

// State is a node's role in the raft group, in raft's own words in lower
// case (the facade's RaftState aliases it).
type State string

// The raft roles.
const (
	StateFollower  State = "follower"
	StateCandidate State = "candidate"
	StateLeader    State = "leader"
	StateShutdown  State = "shutdown"
)

// StateOf names raft's role; anything past Leader reads as StateShutdown.
func StateOf(st raft.RaftState) State {
	if st <= raft.Leader {
		return State(strings.ToLower(st.String())) // follower, candidate, leader
	}
	return StateShutdown
}

// State returns this node's current raft role.
func (n *Node) State() State { return StateOf(n.raft.State()) }

// Leading reports whether raft on this node is the leader now.
func (n *Node) Leading() bool { return n.raft.State() == raft.Leader }

// Term returns raft's current term on this node.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }
