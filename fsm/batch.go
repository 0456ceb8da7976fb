package fsm

import "fmt"

// shardBatch measures, item by item, the compact encoding of one shard
// command.
type shardBatch struct {
	strs     shardStrings
	items    int
	strBytes int // the strings' lengths and bytes
	itemSize int // the items' bytes
}

// sizeWith returns the command's encoded length with it added (version,
// operation, flags, the two counts, the strings and the items), without
// adding it.
func (s *shardBatch) sizeWith(it *ShardItem) int {
	strs, strBytes := len(s.strs.list), s.strBytes
	ref := func(str string) uint64 {
		if i, ok := s.strs.index[str]; ok {
			return i
		}
		strs++
		strBytes += uvarintLen(uint64(len(str))) + len(str)
		return uint64(strs - 1)
	}
	i, to := ref(it.Session), uint64(0)
	if it.To != "" {
		if it.To == it.Session {
			to = i + 1
		} else {
			to = ref(it.To) + 1
		}
	}
	item := uvarintLen(uint64(it.Shard)) + uvarintLen(i) + uvarintLen(it.Token) + uvarintLen(to)
	return 3 + uvarintLen(uint64(strs)) + strBytes + uvarintLen(uint64(s.items+1)) + s.itemSize + item
}

// add adds it to the command.
func (s *shardBatch) add(it *ShardItem) {
	i, added := s.strs.ref(it.Session)
	if added {
		s.strBytes += uvarintLen(uint64(len(it.Session))) + len(it.Session)
	}
	to := uint64(0)
	if it.To != "" {
		j, added := s.strs.ref(it.To)
		if added {
			s.strBytes += uvarintLen(uint64(len(it.To))) + len(it.To)
		}
		to = j + 1
	}
	s.items++
	s.itemSize += uvarintLen(uint64(it.Shard)) + uvarintLen(i) + uvarintLen(it.Token) + uvarintLen(to)
}

// EncodeShardCmds encodes c as op (OpShardGrant, OpShardRevoke or
// OpShardRelease) in as few commands as the limits allow: each holds at
// most MaxShardItems items and encodes to at most MaxCommandSize bytes.
// The items keep their order and every command keeps c.Force. A command
// names each distinct session ID once, so with few sessions an item takes
// about 10 bytes and MaxShardItems is the limit that splits. It fails on
// an empty batch, on an op that is not a shard command, and on an item too
// large for any command.
func EncodeShardCmds(op Op, c ShardCmd) ([][]byte, error) {
	if op != OpShardGrant && op != OpShardRevoke && op != OpShardRelease {
		return nil, fmt.Errorf("%w: %s is not a shard command", ErrMalformed, op)
	}
	if len(c.Items) == 0 {
		return nil, fmt.Errorf("%w: a shard command needs items", ErrMalformed)
	}
	var out [][]byte
	start := 0
	var cur shardBatch
	for i := range c.Items {
		it := &c.Items[i]
		if cur.items < MaxShardItems && cur.sizeWith(it) <= MaxCommandSize {
			cur.add(it)
			continue
		}
		if i == start || (&shardBatch{}).sizeWith(it) > MaxCommandSize {
			return nil, fmt.Errorf("%w: shard item %d does not fit a command", ErrTooLarge, i)
		}
		b, err := encodeShardCmd(op, &ShardCmd{Force: c.Force, Items: c.Items[start:i]})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		start, cur = i, shardBatch{}
		cur.add(it)
	}
	b, err := encodeShardCmd(op, &ShardCmd{Force: c.Force, Items: c.Items[start:]})
	if err != nil {
		return nil, err
	}
	return append(out, b), nil
}
