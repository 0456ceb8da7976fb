package fsm

import (
	"fmt"

	"github.com/holdfast-go/holdfast/internal/codec"
)

// Decode parses the log encoding of a command. It never panics; any input
// that Encode could not have produced is an error.
func Decode(b []byte) (Command, error) { return decode(b, nil) }

// decode is Decode, decoding a compact shard command's items into items
// when it has room (Apply reuses one buffer for every command).
func decode(b []byte, items []ShardItem) (Command, error) {
	if len(b) > MaxCommandSize {
		return Command{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(b))
	}
	if len(b) < 2 {
		return Command{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	c := Command{Op: Op(b[1])}
	body := b[2:]
	switch {
	case b[0] == ShardCommandVersion && (c.Op == OpShardGrant || c.Op == OpShardRevoke || c.Op == OpShardRelease):
		sc, err := decodeShardBody(body, items)
		if err != nil {
			return Command{}, err
		}
		c.Shard = sc
		return c, nil
	case b[0] == ShardCommandVersion:
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, b[0])
	case b[0] == InitCommandVersion:
		return decodeInit(c, body, true)
	case b[0] == ValueCommandVersion:
		return decodeValued(c, body)
	case b[0] == PinCommandVersion:
		return decodePin(c, body)
	case b[0] == RuleCommandVersion:
		return decodeRuled(c, body)
	case b[0] == HandoverCommandVersion:
		return decodeHandover(c, body)
	case b[0] != CommandVersion:
		return Command{}, fmt.Errorf("%w: %d", ErrUnknownVersion, b[0])
	}
	switch c.Op {
	case OpInitCluster:
		return decodeInit(c, body, false)
	case OpNoop:
		if len(body) != 0 {
			return Command{}, fmt.Errorf("%w: noop with a body", ErrMalformed)
		}
	case OpSessionCreate, OpSessionClose, OpSessionExpire, OpSessionDrain:
		c.Session = new(SessionCmd)
		if err := decodeBody(body, c.Session); err != nil {
			return Command{}, err
		}
		if len(c.Session.Tags) > 0 {
			return Command{}, fmt.Errorf("%w: a session with tags only under version %d", ErrMalformed, RuleCommandVersion)
		}
	case OpAcquire, OpRelease:
		c.Lease = new(LeaseCmd)
		if err := decodeBody(body, c.Lease); err != nil {
			return Command{}, err
		}
		if c.carriesValue() {
			return Command{}, fmt.Errorf("%w: acquire with a value only under version %d", ErrMalformed, ValueCommandVersion)
		}
		if err := c.Lease.checkNotHandover(); err != nil {
			return Command{}, err
		}
	case OpShardGrant, OpShardRevoke, OpShardRelease:
		c.Shard = new(ShardCmd)
		if err := decodeBody(body, c.Shard); err != nil {
			return Command{}, err
		}
	case OpSemAcquire, OpSemRelease:
		c.Sem = new(SemCmd)
		if err := decodeBody(body, c.Sem); err != nil {
			return Command{}, err
		}
	default:
		return Command{}, fmt.Errorf("%w: %d", ErrUnknownOp, b[1])
	}
	return c, nil
}

// decodeInit decodes the body of an OpInitCluster written under
// InitCommandVersion (withBase) or CommandVersion: only the first carries a
// token base, and only an OpInitCluster is written under it.
func decodeInit(c Command, body []byte, withBase bool) (Command, error) {
	if c.Op != OpInitCluster {
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, InitCommandVersion)
	}
	c.Init = new(InitCluster)
	if err := decodeBody(body, c.Init); err != nil {
		return Command{}, err
	}
	if c.Init.hasBase() != withBase {
		return Command{}, fmt.Errorf("%w: init-cluster with a token base only under version %d", ErrMalformed, InitCommandVersion)
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
