package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// PinCommandVersion is the version byte in front of an OpShardPin. A
// release before it reads no such command (ErrUnknownVersion): a mixed
// cluster must finish upgrading before an operator pins a shard.
const PinCommandVersion = 5

// SnapshotPinVersion is the version byte in front of a snapshot that holds
// a shard pin: a release before it would restore it without the pins, so
// it refuses it (ErrUnknownVersion). Holder values may appear under it too;
// the body is as under SnapshotVersion, with a "pins" list.
const SnapshotPinVersion = 3

// MaxPins bounds the pins the state keeps; a pin beyond it is refused.
const MaxPins = 4096

// PinCmd is the body of OpShardPin: an operator's placement of one shard.
type PinCmd struct {
	// Shard is the shard placed.
	Shard uint32 `msgpack:"shard"`
	// Node names the node (its Config.NodeName) the shard must live on.
	// With Clear, the pin is removed only if it names this node ("": any).
	Node string `msgpack:"node,omitempty"`
	// Once makes the pin a move: the leader clears it once the shard is
	// owned on Node, and the balancer is free to place it again after.
	Once bool `msgpack:"once,omitempty"`
	// Clear removes the shard's pin instead of setting one.
	Clear bool `msgpack:"clear,omitempty"`
}

// Pin is one shard's operator placement, as the state keeps it.
type Pin struct {
	Shard uint32 `msgpack:"shard"`
	Node  string `msgpack:"node"`
	Once  bool   `msgpack:"once,omitempty"`
	// Index is the raft index at which the pin was set.
	Index uint64 `msgpack:"index"`
}

// decodePin decodes the body of a command written under PinCommandVersion.
func decodePin(c Command, body []byte) (Command, error) {
	if c.Op != OpShardPin {
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, PinCommandVersion)
	}
	c.Pin = new(PinCmd)
	if err := decodeBody(body, c.Pin); err != nil {
		return Command{}, err
	}
	return c, nil
}

// applyShardPin sets or clears a shard's pin: Result.Count is 1 when the
// state changed. A pin of a shard out of range, to an invalid node name,
// or beyond MaxPins is an error; clearing an absent pin changes nothing.
func applyShardPin(st state, index uint64, c *PinCmd) (state, Result, error) {
	if len(st.Shards) == 0 || c.Shard >= st.Cluster.Shards {
		return st, Result{}, fmt.Errorf("%w: pin of shard %d, the cluster has %d", ErrMalformed, c.Shard, st.Cluster.Shards)
	}
	old, had := st.Pins[c.Shard]
	if c.Clear {
		if !had || (c.Node != "" && old.Node != c.Node) {
			return st, Result{}, nil
		}
		next := maps.Clone(st.Pins)
		delete(next, c.Shard)
		st.Pins = next
		return st, Result{Count: 1}, nil
	}
	if err := validName("node name", c.Node); err != nil {
		return st, Result{}, err
	}
	if had && old.Node == c.Node && old.Once == c.Once {
		return st, Result{}, nil
	}
	if !had && len(st.Pins) >= MaxPins {
		return st, Result{}, fmt.Errorf("%w: more than %d pins", ErrTooLarge, MaxPins)
	}
	next := maps.Clone(st.Pins)
	if next == nil {
		next = map[uint32]Pin{}
	}
	next[c.Shard] = Pin{Shard: c.Shard, Node: c.Node, Once: c.Once, Index: index}
	st.Pins = next
	return st, Result{Count: 1}, nil
}

// pinsFromWire restores a snapshot's pins, rejecting duplicates and pins
// outside the table.
func pinsFromWire(st *state, pins []Pin) error {
	if len(pins) == 0 {
		return nil
	}
	if len(pins) > MaxPins {
		return fmt.Errorf("%w: %d pins in snapshot", ErrMalformed, len(pins))
	}
	st.Pins = make(map[uint32]Pin, len(pins))
	for _, p := range pins {
		if _, dup := st.Pins[p.Shard]; dup || p.Shard >= st.Cluster.Shards || len(st.Shards) == 0 || validName("node name", p.Node) != nil {
			return fmt.Errorf("%w: pin of shard %d is inconsistent", ErrMalformed, p.Shard)
		}
		st.Pins[p.Shard] = p
	}
	return nil
}

// Pins returns every shard pin, in shard order.
func (v *View) Pins() []Pin {
	out := slices.Collect(maps.Values(v.st.Pins))
	slices.SortFunc(out, func(a, b Pin) int { return int(a.Shard) - int(b.Shard) })
	return out
}

// ShardPin returns shard's pin, if it has one.
func (v *View) ShardPin(shard uint32) (Pin, bool) {
	p, ok := v.st.Pins[shard]
	return p, ok
}
