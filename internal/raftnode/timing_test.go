package raftnode_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// TestTimingCheck: each raft timing rule names the facade's Config field
// and says what is wrong; the first broken rule wins.
func TestTimingCheck(t *testing.T) {
	ok := raftnode.Timing{HeartbeatTimeout: time.Second, ElectionTimeout: time.Second, LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout: 50 * time.Millisecond, SnapshotThreshold: 8, TrailingLogs: 8}
	if err := errors.Join(ok.Check(), ok.CheckSnapshot()); err != nil {
		t.Fatalf("valid timing: %v", err)
	}
	for _, tc := range []struct {
		edit       func(*raftnode.Timing)
		field, msg string
		snapshot   bool
	}{
		{func(r *raftnode.Timing) { r.HeartbeatTimeout, r.ElectionTimeout = 0, 0 }, "Raft.HeartbeatTimeout", "is 0s; must be at least 5ms", false},
		{func(r *raftnode.Timing) { r.ElectionTimeout = time.Millisecond }, "Raft.ElectionTimeout", "is 1ms; must be at least 5ms", false},
		{func(r *raftnode.Timing) { r.LeaderLeaseTimeout = 2 * time.Second }, "Raft.LeaderLeaseTimeout",
			"is 2s; must be between 5ms and HeartbeatTimeout (1s)", false},
		{func(r *raftnode.Timing) { r.CommitTimeout = 0 }, "Raft.CommitTimeout", "must be positive", false},
		{func(r *raftnode.Timing) { r.SnapshotThreshold = 0 }, "Raft.SnapshotThreshold", "must be positive", true},
	} {
		r := ok
		tc.edit(&r)
		err := r.Check()
		if tc.snapshot {
			err = r.CheckSnapshot()
		}
		var fe *raftnode.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want a *FieldError", tc.field, err)
			continue
		}
		if field, msg := fe.ConfigField(); field != tc.field || msg != tc.msg {
			t.Errorf("got %s: %q, want %s: %q", field, msg, tc.field, tc.msg)
		}
	}
}

// TestStateOf: the role words are raft's own, lower case; anything past
// Leader reads as shutdown.
func TestStateOf(t *testing.T) {
	for st, want := range map[raft.RaftState]raftnode.State{
		raft.Follower: raftnode.StateFollower, raft.Candidate: raftnode.StateCandidate, raft.Leader: raftnode.StateLeader,
		raft.Shutdown: raftnode.StateShutdown, raft.RaftState(99): raftnode.StateShutdown,
	} {
		if got := raftnode.StateOf(st); got != want {
			t.Errorf("StateOf(%v) = %q, want %q", st, got, want)
		}
	}
}
