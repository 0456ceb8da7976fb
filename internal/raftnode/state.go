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
