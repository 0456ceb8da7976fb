package fsm

import (
	"math"
	"math/bits"
	"slices"
	"strings"
)

// The owned index lists, per session ID, the shards whose entry names that
// session as owner, so that a session's end frees its shards at a cost
// that follows how many it owns rather than the table's size. It is
// derived from the table (snapshots do not carry it; Restore rebuilds
// it), kept copy-on-write like the table, and read only in shard order,
// so Apply stays deterministic.
//
// A session's set is a bitmap in chunks of ownedChunkShards shards (256
// bytes), nil where the session owns none: a command copies the index (one
// entry per session), and each session's chunk list and each chunk it
// touches, once.
const (
	ownedChunkBits   = 11
	ownedChunkShards = 1 << ownedChunkBits
)

type (
	ownedChunk [ownedChunkShards / 64]uint64
	// ownedSet is one session's shards; count is how many.
	ownedSet struct {
		count  int
		chunks []*ownedChunk
		// gen is the raft index of the command that made this copy while
		// that command edits it, and from is the set it copied (the chunks
		// they share are not this command's to write); both are cleared
		// when the command is done, so a published set is never written.
		gen  uint64
		from *ownedSet
	}
	// ownedIndex is sorted by session ID: a command copies it whole,
	// a few dozen bytes per session, and finds a session by binary search.
	ownedIndex []ownedRef
	ownedRef   struct {
		id  string
		set *ownedSet
	}
)

// get returns session's set, or nil.
func (x ownedIndex) get(session string) *ownedSet {
	if i, ok := x.find(session); ok {
		return x[i].set
	}
	return nil
}

func (x ownedIndex) find(session string) (int, bool) {
	return slices.BinarySearchFunc(x, session, func(r ownedRef, id string) int { return strings.Compare(r.id, id) })
}

// each calls fn for every shard in the set, in shard order.
func (s *ownedSet) each(fn func(id uint32)) {
	for slot, c := range s.chunks {
		if c == nil {
			continue
		}
		for w, word := range c {
			for word != 0 {
				fn(uint32(slot<<ownedChunkBits + w*64 + bits.TrailingZeros64(word)))
				word &= word - 1
			}
		}
	}
}

// ownedEditor changes the owned index for the command at index,
// copy-on-write.
type ownedEditor struct {
	index  uint64
	cloned bool        // the state's index is this command's copy
	made   []*ownedSet // the sets this command copied or created
	// byOwner caches the sets looked up, by the session record the table
	// points at (cheaper than searching by ID for every shard), and
	// lastOwner the last one (a release or a session's end has one owner).
	byOwner   map[*Session]*ownedSet
	lastOwner *Session
	lastSet   *ownedSet
}

// set returns owner's set, private to this command, in st's index.
func (o *ownedEditor) set(st *state, owner *Session) *ownedSet {
	if owner == o.lastOwner {
		return o.lastSet
	}
	p := o.byOwner[owner]
	if p == nil {
		if o.byOwner == nil {
			o.byOwner = map[*Session]*ownedSet{}
		}
		p = o.private(st, owner.ID)
		o.byOwner[owner] = p
	}
	o.lastOwner, o.lastSet = owner, p
	return p
}

// private returns session's set, private to this command, in st's index.
func (o *ownedEditor) private(st *state, session string) *ownedSet {
	i, found := st.owned.find(session)
	if found && st.owned[i].set.gen == o.index && o.index != 0 {
		return st.owned[i].set
	}
	if !o.cloned {
		st.owned = append(make(ownedIndex, 0, len(st.owned)+1), st.owned...)
		o.cloned = true
	}
	p := &ownedSet{gen: o.index}
	if found {
		orig := st.owned[i].set
		p.count, p.chunks, p.from = orig.count, append([]*ownedChunk(nil), orig.chunks...), orig
		st.owned[i].set = p
	} else {
		st.owned = slices.Insert(st.owned, i, ownedRef{id: session, set: p})
	}
	o.made = append(o.made, p)
	return p
}

// mark adds shard id to owner's set, or removes it.
func (o *ownedEditor) mark(st *state, owner *Session, id uint32, owned bool) {
	p := o.set(st, owner)
	slot, w, bit := int(id>>ownedChunkBits), id%ownedChunkShards/64, uint64(1)<<(id%64)
	if slot >= len(p.chunks) {
		p.chunks = append(p.chunks, make([]*ownedChunk, slot+1-len(p.chunks))...)
	}
	c := p.chunks[slot]
	switch f := p.from; {
	case c == nil:
		c = new(ownedChunk)
		p.chunks[slot] = c
	case f != nil && slot < len(f.chunks) && f.chunks[slot] == c:
		nc := *c
		c = &nc
		p.chunks[slot] = c
	}
	if owned {
		c[w] |= bit
		p.count++
		return
	}
	c[w] &^= bit
	p.count--
	if *c == (ownedChunk{}) {
		p.chunks[slot] = nil
	}
}

// done seals this command's sets and drops those it emptied.
func (o *ownedEditor) done(st *state) {
	empty := false
	for _, p := range o.made {
		p.gen, p.from = 0, nil
		empty = empty || p.count == 0
	}
	if empty {
		st.owned = slices.DeleteFunc(st.owned, func(r ownedRef) bool { return r.set.count == 0 })
	}
	*o = ownedEditor{}
}

// buildOwned derives the owned index of a whole table of n shards.
func buildOwned(t shardTable, n uint32) ownedIndex {
	st := state{}
	o := ownedEditor{index: math.MaxUint64}
	t.eachPage(func(first uint32, page *shardPage) bool {
		for i := range page {
			if e := &page[i]; e.owner != nil && first+uint32(i) < n {
				o.mark(&st, e.owner, first+uint32(i), true)
			}
		}
		return true
	})
	o.done(&st)
	return st.owned
}
