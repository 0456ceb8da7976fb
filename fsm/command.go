package fsm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/holdfast-go/holdfast/internal/codec"
)

// CommandVersion is the version byte written in front of every command this
// release encodes. Decode rejects any other version.
const CommandVersion = 1

// MaxCommandSize is the largest encoded command Decode accepts, in bytes.
const MaxCommandSize = 64 << 10

// Op names a command's operation.
type Op uint8

// The operations. Values are part of the log format: never renumber them.
const (
	// OpInitCluster records the cluster's identity and creation parameters.
	OpInitCluster Op = 1
	// OpNoop changes nothing but the applied index; leaders use it as a
	// barrier that is visible in the log.
	OpNoop Op = 2
)

// String returns the operation's name.
func (o Op) String() string {
	switch o {
	case OpInitCluster:
		return "init-cluster"
	case OpNoop:
		return "noop"
	default:
		return fmt.Sprintf("op(%d)", uint8(o))
	}
}

// Command is one decoded log entry: an operation and its body, exactly one
// of the body fields set, matching Op.
type Command struct {
	Op   Op
	Init *InitCluster
}

// InitCluster records the identity and creation parameters of the cluster.
// The first InitCluster applied wins; a later one with the same ID is a
// no-op, and one with another ID is rejected.
type InitCluster struct {
	// ClusterID identifies the cluster; generated once at bootstrap.
	ClusterID string `msgpack:"id"`
	// Shards is the fixed number of shards. It must be positive.
	Shards uint32 `msgpack:"shards"`
	// Voters is the number of voters the cluster keeps (1, 3 or 5).
	Voters uint8 `msgpack:"voters"`
	// CreatedBy names the node that proposed the cluster.
	CreatedBy string `msgpack:"by"`
}

// Errors returned by Decode and carried in Result.Err.
var (
	// ErrMalformed: the bytes are not a valid command or snapshot.
	ErrMalformed = errors.New("fsm: malformed input")
	// ErrTooLarge: the command or snapshot exceeds its size limit.
	ErrTooLarge = errors.New("fsm: input too large")
	// ErrUnknownVersion: the version byte is not one this release reads.
	ErrUnknownVersion = errors.New("fsm: unknown version")
	// ErrUnknownOp: the operation byte names no known operation.
	ErrUnknownOp = errors.New("fsm: unknown operation")
	// ErrConflict: the command contradicts the state (for example a second
	// InitCluster with another cluster ID).
	ErrConflict = errors.New("fsm: command conflicts with state")
)

// Encode returns the log encoding of c.
func Encode(c Command) ([]byte, error) {
	var body any
	switch c.Op {
	case OpInitCluster:
		if c.Init == nil {
			return nil, fmt.Errorf("%w: %s without body", ErrMalformed, c.Op)
		}
		body = c.Init
	case OpNoop:
		body = nil
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownOp, c.Op)
	}
	var buf bytes.Buffer
	buf.WriteByte(CommandVersion)
	buf.WriteByte(byte(c.Op))
	if body != nil {
		if err := msgpack.NewEncoder(&buf).Encode(body); err != nil {
			return nil, err
		}
	}
	if buf.Len() > MaxCommandSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, buf.Len())
	}
	return buf.Bytes(), nil
}

// Decode parses the log encoding of a command. It never panics; any input
// that Encode could not have produced is an error.
func Decode(b []byte) (Command, error) {
	if len(b) > MaxCommandSize {
		return Command{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(b))
	}
	if len(b) < 2 {
		return Command{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != CommandVersion {
		return Command{}, fmt.Errorf("%w: %d", ErrUnknownVersion, b[0])
	}
	c := Command{Op: Op(b[1])}
	body := b[2:]
	switch c.Op {
	case OpInitCluster:
		c.Init = new(InitCluster)
		if err := decodeBody(body, c.Init); err != nil {
			return Command{}, err
		}
	case OpNoop:
		if len(body) != 0 {
			return Command{}, fmt.Errorf("%w: noop with a body", ErrMalformed)
		}
	default:
		return Command{}, fmt.Errorf("%w: %d", ErrUnknownOp, b[1])
	}
	return c, nil
}

// decodeBody decodes exactly one msgpack value from b into v, rejecting
// trailing bytes.
func decodeBody(b []byte, v any) error {
	if err := codec.Decode(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}
