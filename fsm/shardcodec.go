package fsm

import (
	"fmt"
	"math"
)

// The compact body of a shard command (OpShardGrant, OpShardRevoke and
// OpShardRelease under ShardCommandVersion). Every number is an unsigned
// varint in its shortest form:
//
//	flags                       1 byte: bit 0 is Force, the others are 0
//	strings                     the count, then each as length + bytes
//	items                       the count, then for each item:
//	  shard, session, token, to
//
// session is the index of the item's session ID in the strings, and to is
// 0 for no target or 1 + the index of the (non-empty) target. The strings
// are the distinct session IDs and targets of the items in order of first
// use (session before target), so that a body has exactly one encoding and
// a command repeats no session ID per item. Decoding reflects on nothing
// and allocates one string per distinct ID, and the items unless Apply's
// reused buffer holds them. Like the msgpack form, the encoding carries
// what Apply rejects (no items, an empty or overlong session ID), so that
// Apply, not the encoding, decides.

// shardFlagForce is the flags bit of ShardCmd.Force.
const shardFlagForce = 1

// appendUvarint appends v as a varint.
func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// uvarintLen is the encoded length of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// shardStrings numbers the distinct strings of a command in order of first
// use.
type shardStrings struct {
	list  []string
	index map[string]uint64
}

// ref returns s's index, adding it when new; added reports that.
func (t *shardStrings) ref(s string) (i uint64, added bool) {
	if i, ok := t.index[s]; ok {
		return i, false
	}
	if t.index == nil {
		t.index = map[string]uint64{}
	}
	i = uint64(len(t.list))
	t.index[s] = i
	t.list = append(t.list, s)
	return i, true
}

// appendShardBody appends c's compact body to b. It fails on more than
// MaxShardItems items.
func appendShardBody(b []byte, c *ShardCmd) ([]byte, error) {
	if len(c.Items) > MaxShardItems {
		return nil, fmt.Errorf("%w: a shard command needs 1 to %d items", ErrMalformed, MaxShardItems)
	}
	var strs shardStrings
	refs := make([]uint64, 0, 2*len(c.Items))
	for _, it := range c.Items {
		i, _ := strs.ref(it.Session)
		to := uint64(0)
		if it.To != "" {
			j, _ := strs.ref(it.To)
			to = j + 1
		}
		refs = append(refs, i, to)
	}
	flags := byte(0)
	if c.Force {
		flags = shardFlagForce
	}
	b = append(b, flags)
	b = appendUvarint(b, uint64(len(strs.list)))
	for _, s := range strs.list {
		b = appendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = appendUvarint(b, uint64(len(c.Items)))
	for k, it := range c.Items {
		b = appendUvarint(b, uint64(it.Shard))
		b = appendUvarint(b, refs[2*k])
		b = appendUvarint(b, it.Token)
		b = appendUvarint(b, refs[2*k+1])
	}
	return b, nil
}

// shardReader reads a compact body; the first error sticks.
type shardReader struct {
	b   []byte
	err error
}

func (r *shardReader) fail(what string) {
	r.b = nil // every later read fails too
	if r.err == nil {
		r.err = fmt.Errorf("%w: shard command: %s", ErrMalformed, what)
	}
}

// uvarint reads a varint in its shortest form that is at most max.
func (r *shardReader) uvarint(what string, max uint64) uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 && uint64(r.b[0]) <= max {
		v := uint64(r.b[0])
		r.b = r.b[1:]
		return v
	}
	return r.uvarintLong(what, max)
}

// uvarintLong is uvarint for a varint of more than one byte, or an error.
func (r *shardReader) uvarintLong(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(r.b) && i < 10; i++ {
		c := r.b[i]
		if i == 9 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i > 0 && c == 0 {
				break // not the shortest form
			}
			if v > max {
				break
			}
			r.b = r.b[i+1:]
			return v
		}
	}
	r.fail(what)
	return 0
}

// decodeShardBody parses a compact body, rejecting anything
// appendShardBody could not have written. The items go into buf when it
// has room.
func decodeShardBody(b []byte, buf []ShardItem) (*ShardCmd, error) {
	r := shardReader{b: b}
	if len(r.b) == 0 || r.b[0]&^shardFlagForce != 0 {
		return nil, fmt.Errorf("%w: shard command flags", ErrMalformed)
	}
	c := &ShardCmd{Force: r.b[0] == shardFlagForce}
	r.b = r.b[1:]
	// Every string is used by an item and every item uses at most two.
	strs := make([]string, r.uvarint("string count", min(2*MaxShardItems, uint64(len(r.b)))))
	for i := range strs {
		n := r.uvarint("string length", MaxCommandSize)
		if r.err != nil || n > uint64(len(r.b)) {
			r.fail("string")
			break
		}
		strs[i] = string(r.b[:n])
		r.b = r.b[n:]
	}
	n := r.uvarint("item count", MaxShardItems)
	if r.err != nil || n > uint64(len(r.b))/4 {
		r.fail("item count")
		return nil, r.err
	}
	if uint64(cap(buf)) >= n {
		c.Items = buf[:n]
	} else {
		c.Items = make([]ShardItem, n)
	}
	used := uint64(0) // strings used so far: the next new one must be this
	for k := range c.Items {
		it := &c.Items[k]
		it.Shard = uint32(r.uvarint("shard", math.MaxUint32))
		s := r.uvarint("session", used)
		it.Token = r.uvarint("token", math.MaxUint64)
		if r.err != nil || s >= uint64(len(strs)) {
			r.fail("session index")
			return nil, r.err
		}
		if s == used {
			used++
		}
		it.Session, it.To = strs[s], ""
		if to := r.uvarint("target", used+1); to > 0 {
			if to-1 >= uint64(len(strs)) || strs[to-1] == "" {
				r.fail("target index")
				return nil, r.err
			}
			if to-1 == used {
				used++
			}
			it.To = strs[to-1]
		}
	}
	if r.err == nil && (used != uint64(len(strs)) || len(r.b) != 0) {
		r.fail("unused strings or trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := strsDistinct(strs); err != nil {
		return nil, err
	}
	return c, nil
}

// strsDistinct rejects a string table that lists a string twice.
func strsDistinct(strs []string) error {
	dup := false
	if len(strs) <= 16 {
		for i := range strs {
			for j := range i {
				dup = dup || strs[i] == strs[j]
			}
		}
	} else {
		seen := make(map[string]struct{}, len(strs))
		for _, s := range strs {
			_, d := seen[s]
			dup = dup || d
			seen[s] = struct{}{}
		}
	}
	if dup {
		return fmt.Errorf("%w: shard command lists a session ID twice", ErrMalformed)
	}
	return nil
}
