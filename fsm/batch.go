package fsm

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// shardCmdOverhead returns the bytes of a shard command other than its n
// items: version and operation bytes, the body's map header, the "force"
// entry (when set), the "items" key and the items' array header.
func shardCmdOverhead(force bool, n int) int {
	size := 2 + 1 + 6 + 1
	if force {
		size += 7
	}
	if n > 15 {
		size += 2
	}
	if n > 65535 {
		size += 2
	}
	return size
}

// EncodeShardCmds encodes c as op (OpShardGrant, OpShardRevoke or
// OpShardRelease) in as few commands as the limits allow: each holds at
// most MaxShardItems items and encodes to at most MaxCommandSize bytes.
// The items keep their order and every command keeps c.Force. With
// coordinator-sized session IDs (32 bytes) one command carries about
// 1,390 grant items, 1,150 release items or 690 revoke items with a
// target. It fails on an empty batch, on an op that is not a shard
// command, and on an item too large for any command.
func EncodeShardCmds(op Op, c ShardCmd) ([][]byte, error) {
	if op != OpShardGrant && op != OpShardRevoke && op != OpShardRelease {
		return nil, fmt.Errorf("%w: %s is not a shard command", ErrMalformed, op)
	}
	if len(c.Items) == 0 {
		return nil, fmt.Errorf("%w: a shard command needs items", ErrMalformed)
	}
	var out [][]byte
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	start, size := 0, 0 // size: the items from start on
	flush := func(end int) error {
		b, err := Encode(Command{Op: op, Shard: &ShardCmd{Force: c.Force, Items: c.Items[start:end]}})
		if err != nil {
			return err
		}
		out = append(out, b)
		start, size = end, 0
		return nil
	}
	for i := range c.Items {
		buf.Reset()
		if err := enc.Encode(&c.Items[i]); err != nil {
			return nil, err
		}
		n := buf.Len()
		if shardCmdOverhead(c.Force, 1)+n > MaxCommandSize {
			return nil, fmt.Errorf("%w: shard item %d encodes to %d bytes", ErrTooLarge, i, n)
		}
		if i > start && (i-start == MaxShardItems || shardCmdOverhead(c.Force, i-start+1)+size+n > MaxCommandSize) {
			if err := flush(i); err != nil {
				return nil, err
			}
		}
		size += n
	}
	if err := flush(len(c.Items)); err != nil {
		return nil, err
	}
	return out, nil
}
