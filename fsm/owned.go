package fsm

import "math/bits"

// The owned index lists, per session ID, the shards whose entry names that
// session as owner, so that a session's end frees its shards at a cost
// that follows how many it owns rather than the table's size. It is
// derived from the table (snapshots do not carry it; Restore rebuilds
// it), kept copy-on-write like the table, and read only in shard order,
// so Apply stays deterministic.
//
// A session's set is a bitmap in chunks of ownedChunkShards shards (128
// bytes), nil where the session owns none: a command copies the session
// map, each session's chunk list and each chunk it touches once.
const (
	ownedChunkBits   = 10
	ownedChunkShards = 1 << ownedChunkBits
)

type (
	ownedChunk [ownedChunkShards / 64]uint64
	// ownedSet is one session's shards; count is how many.
	ownedSet struct {
		count  int
		chunks []*ownedChunk
	}
	ownedIndex map[string]*ownedSet
)

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

// ownedEditor changes the owned index of one command copy-on-write.
type ownedEditor struct {
	priv map[string]*ownedSet // the sets private to this command
	orig map[string]*ownedSet // each private set's original (nil: new)
}

// set returns session's set, private to this command, in st's index.
func (o *ownedEditor) set(st *state, session string) *ownedSet {
	if p := o.priv[session]; p != nil {
		return p
	}
	if o.priv == nil {
		o.priv, o.orig = map[string]*ownedSet{}, map[string]*ownedSet{}
		next := make(ownedIndex, len(st.owned)+1)
		for k, v := range st.owned {
			next[k] = v
		}
		st.owned = next
	}
	orig := st.owned[session]
	p := &ownedSet{}
	if orig != nil {
		p.count, p.chunks = orig.count, append([]*ownedChunk(nil), orig.chunks...)
	}
	o.priv[session], o.orig[session] = p, orig
	st.owned[session] = p
	return p
}

// mark adds shard id to session's set, or removes it.
func (o *ownedEditor) mark(st *state, session string, id uint32, owned bool) {
	p := o.set(st, session)
	slot, w, bit := int(id>>ownedChunkBits), id%ownedChunkShards/64, uint64(1)<<(id%64)
	if slot >= len(p.chunks) {
		p.chunks = append(p.chunks, make([]*ownedChunk, slot+1-len(p.chunks))...)
	}
	c := p.chunks[slot]
	switch orig := o.orig[session]; {
	case c == nil:
		c = new(ownedChunk)
		p.chunks[slot] = c
	case orig != nil && slot < len(orig.chunks) && orig.chunks[slot] == c:
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

// done drops the sets this command emptied.
func (o *ownedEditor) done(st *state) {
	for session, p := range o.priv {
		if p.count == 0 {
			delete(st.owned, session)
		}
	}
}

// buildOwned derives the owned index of a whole table of n shards.
func buildOwned(t shardTable, n uint32) ownedIndex {
	st := state{owned: ownedIndex{}}
	var o ownedEditor
	o.priv, o.orig = map[string]*ownedSet{}, map[string]*ownedSet{}
	t.eachPage(func(first uint32, page *shardPage) bool {
		for i := range page {
			if e := &page[i]; e.owner != nil && first+uint32(i) < n {
				o.mark(&st, e.owner.ID, first+uint32(i), true)
			}
		}
		return true
	})
	return st.owned
}
