package raftnode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// TestLeaderLost: Commit's reports of a command whose fate is open because
// of the leader (none, lost mid-commit, changed while a forward waited)
// are LeaderLost, wrapped or not; its other failures are not.
func TestLeaderLost(t *testing.T) {
	lost := []error{
		ErrLeaderChanged,
		raft.ErrLeadershipLost,
		wire.ErrNoLeader,
		fmt.Errorf("%w: %w", wire.ErrNoLeader, context.DeadlineExceeded),
		&wire.NotLeaderError{Leader: "n1:7000"},
		fmt.Errorf("raft.apply on n1:7000: %w", ErrLeaderChanged),
	}
	for _, err := range lost {
		if !LeaderLost(err) {
			t.Errorf("LeaderLost(%v) = false, want true", err)
		}
	}
	other := []error{nil, wire.ErrShutdown, context.Canceled, errors.New("disk full"), wire.ErrRejected}
	for _, err := range other {
		if LeaderLost(err) {
			t.Errorf("LeaderLost(%v) = true, want false", err)
		}
	}
}
