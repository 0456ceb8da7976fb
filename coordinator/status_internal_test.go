package coordinator

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/membership"
)

// TestStatusWords: the public role and member-state words are raft's and
// gossip's own names, mapped one to one.
func TestStatusWords(t *testing.T) {
	for st, want := range map[raft.RaftState]RaftState{
		raft.Follower: StateFollower, raft.Candidate: StateCandidate, raft.Leader: StateLeader,
		raft.Shutdown: StateShutdown, raft.RaftState(99): StateShutdown,
	} {
		if got := raftnode.StateOf(st); got != want {
			t.Errorf("raftnode.StateOf(%v) = %q, want %q", st, got, want)
		}
	}
	for st, want := range map[membership.State]MemberState{
		membership.Alive: MemberAlive, membership.Suspect: MemberSuspect,
		membership.Failed: MemberFailed, membership.Left: MemberLeft,
	} {
		if got := MemberState(st.String()); got != want {
			t.Errorf("membership.%v reads as %q, want %q", st, got, want)
		}
	}
}
