package wire

import (
	"errors"
	"fmt"
	"strings"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/transport"
)

// The errors the protocol carries. The coordinator exports them under the
// same names; their texts are what users see.
var (
	// ErrShutdown: the node is shut down (or shutting down).
	ErrShutdown = errors.New("holdfast: coordinator is shut down")
	// ErrNoLeader: no raft leader is known.
	ErrNoLeader = errors.New("holdfast: no raft leader")
	// ErrNotLeader: a leader-only request reached a follower.
	ErrNotLeader = errors.New("holdfast: not the raft leader")
	// ErrRejected: the state machine refused a command.
	ErrRejected = errors.New("holdfast: command rejected")
	// ErrLeaseHeld: another node holds the lease.
	ErrLeaseHeld = errors.New("holdfast: lease held by another node")
	// ErrBusy: the leader refused a forwarded command.
	ErrBusy = errors.New("holdfast: leader busy")
	// ErrNoSession: the session named no longer exists.
	ErrNoSession = errors.New("holdfast: no such session")
	// ErrForeignCluster: a node belongs to another cluster than this one.
	ErrForeignCluster = errors.New("holdfast: node belongs to another cluster")

	// ErrLeaveRefused: a node may not leave the raft configuration now:
	// fewer voters than the cluster keeps would remain with no replacement
	// (unless forced), the voters left behind could not form a quorum, or
	// it is the last voter.
	ErrLeaveRefused = errors.New("holdfast: leave refused")

	// ErrGossipNotEncrypted: this node, or a member, runs without gossip
	// encryption.
	ErrGossipNotEncrypted = errors.New("holdfast: gossip encryption is not enabled")
	// ErrInvalidGossipKey: the gossip key is not 16, 24 or 32 bytes long.
	ErrInvalidGossipKey = errors.New("holdfast: invalid gossip key")
	// ErrGossipKeyNotInstalled: a live member does not have the gossip key.
	ErrGossipKeyNotInstalled = errors.New("holdfast: gossip key not installed")
	// ErrGossipKeyPrimary: the gossip key is a live member's primary key.
	ErrGossipKeyPrimary = errors.New("holdfast: gossip key is a primary key")
)

// The causes of a grant's end (a lease, a permit, a shard lease), which the
// engine parts report and the coordinator exports under the same names.
// They end beliefs on one node and never cross the wire.
var (
	// ErrReleased: the holder gave the grant up (Release), or an operator
	// released it.
	ErrReleased = errors.New("holdfast: lease released")
	// ErrLeaseLost: the grant ended for any reason but its release.
	ErrLeaseLost = errors.New("holdfast: lease lost")
	// ErrRevoked: this node handed the shard off at the leader's request.
	ErrRevoked = errors.New("holdfast: shard handed off")
)

// NotLeaderError is ErrNotLeader with the leader's RPC address, when known.
type NotLeaderError struct {
	Leader string
}

// Error is ErrNotLeader's text, followed by the leader's address when it
// is known.
func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return ErrNotLeader.Error()
	}
	return fmt.Sprintf("%s (leader is %s)", ErrNotLeader, e.Leader)
}

// Is makes errors.Is(err, ErrNotLeader) true for a *NotLeaderError.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// codes maps errors to codes, first match first: the more specific
// refusals (no session, lease held, semaphore) come before the
// ErrRejected they also wrap.
var codes = [...]struct {
	target error
	code   string
}{
	{ErrNoSession, CodeNoSession},
	{ErrLeaseHeld, CodeLeaseHeld},
	{fsm.ErrSemFull, CodeSemFull},
	{fsm.ErrSemLimit, CodeSemLimit},
	{ErrRejected, CodeRejected},
	{ErrShutdown, CodeShutdown},
	{ErrBusy, CodeBusy},
	{ErrLeaveRefused, CodeLeaveRefused},
	{ErrForeignCluster, CodeForeignCluster},
	{ErrGossipNotEncrypted, CodeGossipNotEncrypted},
	{ErrInvalidGossipKey, CodeGossipBadKey},
	{ErrGossipKeyNotInstalled, CodeGossipNotInstalled},
	{ErrGossipKeyPrimary, CodeGossipPrimary},
}

// ToRemote maps err to the remote error a handler returns: the code of the
// first protocol error it wraps, with err's text as the message (a
// *NotLeaderError sends the leader's address). Other errors are returned
// unchanged (the transport sends them as transport.CodeInternal); nil
// stays nil.
func ToRemote(err error) error {
	if err == nil {
		return nil
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return &transport.RemoteError{Code: CodeNotLeader, Message: nl.Leader}
	}
	for _, c := range codes {
		if errors.Is(err, c.target) {
			return &transport.RemoteError{Code: c.code, Message: err.Error()}
		}
	}
	return err
}

// FromRemote maps a remote error returned by a call back to an error for
// which errors.Is finds the protocol error its code stands for (a
// semaphore refusal wraps both ErrRejected and fsm.ErrSemFull or
// fsm.ErrSemLimit, with the state machine's detail). Other errors,
// including unknown codes, are returned unchanged.
func FromRemote(err error) error {
	var re *transport.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	switch re.Code {
	case CodeNotLeader:
		return &NotLeaderError{Leader: re.Message}
	case CodeRejected:
		return fmt.Errorf("%w: %s", ErrRejected, re.Message)
	case CodeNoSession:
		return fmt.Errorf("%w (%s)", ErrNoSession, re.Message)
	case CodeLeaseHeld:
		return fmt.Errorf("%w (%s)", ErrLeaseHeld, re.Message)
	case CodeShutdown:
		return fmt.Errorf("%w (remote)", ErrShutdown)
	case CodeBusy:
		return fmt.Errorf("%w (%s)", ErrBusy, re.Message)
	case CodeForeignCluster:
		return fmt.Errorf("%w (%s)", ErrForeignCluster, re.Message)
	case CodeSemFull:
		return Wrap(ErrRejected, refusal(fsm.ErrSemFull, re.Message))
	case CodeSemLimit:
		return Wrap(ErrRejected, refusal(fsm.ErrSemLimit, re.Message))
	case CodeLeaveRefused:
		return detailed(ErrLeaveRefused, re.Message)
	case CodeGossipNotEncrypted:
		return detailed(ErrGossipNotEncrypted, re.Message)
	case CodeGossipBadKey:
		return detailed(ErrInvalidGossipKey, re.Message)
	case CodeGossipNotInstalled:
		return detailed(ErrGossipKeyNotInstalled, re.Message)
	case CodeGossipPrimary:
		return detailed(ErrGossipKeyPrimary, re.Message)
	}
	return err
}

// detailed rebuilds a keyring refusal from a message that starts with its
// text: target, then the rest of msg.
func detailed(target error, msg string) error {
	if detail := strings.TrimPrefix(msg, target.Error()); detail != "" {
		return fmt.Errorf("%w%s", target, detail)
	}
	return target
}

// refusal rebuilds a state machine refusal from a message holding its text:
// kind, then the detail that followed kind's text in msg (none when msg
// does not hold it).
func refusal(kind error, msg string) error {
	_, detail, found := strings.Cut(msg, kind.Error())
	if !found {
		return kind
	}
	return fmt.Errorf("%w%s", kind, detail)
}
