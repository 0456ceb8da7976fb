package coordinator

import (
	"errors"
	"fmt"
)

var (
	// ErrShutdown is returned by calls made after Shutdown or Close began.
	ErrShutdown = errors.New("holdfast: coordinator is shut down")
	// ErrNoLeader is returned when a write needs the raft leader and none is
	// known (an election is under way or quorum is lost).
	ErrNoLeader = errors.New("holdfast: no raft leader")
	// ErrNotLeader is returned by leader-only RPCs that reached a follower.
	ErrNotLeader = errors.New("holdfast: not the raft leader")
	// ErrDuplicateName is returned by New when another live node already
	// uses this node's name.
	ErrDuplicateName = errors.New("holdfast: node name already in use")
	// ErrRejected is returned when the state machine refused a command; the
	// wrapped error says why.
	ErrRejected = errors.New("holdfast: command rejected")
)

// NotLeaderError is returned when a request reached a node that is not the
// raft leader. Leader is the leader's RPC address when known.
type NotLeaderError struct {
	Leader string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return ErrNotLeader.Error()
	}
	return fmt.Sprintf("%s (leader is %s)", ErrNotLeader, e.Leader)
}

// Is makes errors.Is(err, ErrNotLeader) true for a *NotLeaderError.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
