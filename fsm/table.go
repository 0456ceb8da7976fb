package fsm

import "fmt"

// shardEntry is one shard as a replica keeps it: 32 bytes on 64-bit
// platforms, with nothing copied per shard. The owner's identity (session
// ID, node name, node ID, address) is the owning session's own immutable
// *Session, shared by every shard it owns; a revoke's index and target are
// held apart, shared by the items of one revoke command, because few shards
// are revoking at any time. The state follows from the fields: free when
// owner is nil, revoking when rev is set, owned otherwise.
type shardEntry struct {
	owner   *Session
	rev     *revocation
	token   uint64
	granted uint64
}

// revocation is the part of a revoking shard's entry that only a revoke
// sets: the revoke's raft index and the advisory target session.
type revocation struct {
	index uint64
	to    string
}

func (e *shardEntry) state() ShardState {
	switch {
	case e.owner == nil:
		return ShardFree
	case e.rev != nil:
		return ShardRevoking
	}
	return ShardOwned
}

// shard expands the entry into the public Shard. It does not allocate.
func (e *shardEntry) shard(id uint32) Shard {
	s := Shard{ID: id, Token: e.token, Granted: e.granted}
	if o := e.owner; o != nil {
		s.State, s.Owner, s.OwnerNode, s.OwnerNodeID, s.OwnerAddr = ShardOwned, o.ID, o.Node, o.NodeID, o.Addr
	}
	if r := e.rev; r != nil {
		s.State, s.Revoked, s.To = ShardRevoking, r.index, r.to
	}
	return s
}

// The table is a two-level tree of copy-on-write pages: a directory holds
// shardDirSize pages, a page holds shardPageSize entries (512 bytes). A
// command copies the root (one pointer per 2,048 shards), each directory
// it touches (1 KiB) and each page it touches, never the table. Pages are
// small because the commands that touch shards far apart (a session's end,
// a balancer's revokes, grants spread over sessions) copy a page per shard:
// 16 entries halve that copying against 32, for a little more of it when a
// command's shards are contiguous.
const (
	shardPageBits = 4
	shardPageSize = 1 << shardPageBits
	shardDirBits  = 7
	shardDirSize  = 1 << shardDirBits
)

type (
	shardPage [shardPageSize]shardEntry
	shardDir  [shardDirSize]*shardPage
	// shardTable is the root: the directories in shard order. Pages past
	// the shard count are nil.
	shardTable []*shardDir
)

// split returns the directory, page and slot of shard id.
func split(id uint32) (d, p, i uint32) {
	return id >> (shardPageBits + shardDirBits), id >> shardPageBits & (shardDirSize - 1), id & (shardPageSize - 1)
}

// at returns shard id's entry; id must be below the shard count.
func (t shardTable) at(id uint32) *shardEntry {
	d, p, i := split(id)
	return &t[d][p][i]
}

// newShardTable returns n free shards.
func newShardTable(n uint32) shardTable {
	pages := (int(n) + shardPageSize - 1) / shardPageSize
	t := make(shardTable, (pages+shardDirSize-1)/shardDirSize)
	for d := range t {
		t[d] = new(shardDir)
		for p := 0; p < shardDirSize && d*shardDirSize+p < pages; p++ {
			t[d][p] = new(shardPage)
		}
	}
	return t
}

// eachPage calls fn for every page in order with the ID of its first
// shard, until fn returns false.
func (t shardTable) eachPage(fn func(first uint32, page *shardPage) bool) {
	for d, dir := range t {
		for p, page := range dir {
			if page == nil || !fn(uint32((d*shardDirSize+p)*shardPageSize), page) {
				return
			}
		}
	}
}

// shardEditor changes shards of a state copy-on-write: the root, each
// touched directory and each touched page are copied once per command.
type shardEditor struct {
	st      *state
	orig    shardTable // the root before the first edit
	ids     *[]uint32  // the changed shards are appended here (if set)
	changed int
	owned   ownedEditor
}

// newShardEditor returns an editor of st's table for the command at index,
// appending the shards it changes to ids (if set).
func newShardEditor(st *state, index uint64, ids *[]uint32) shardEditor {
	return shardEditor{st: st, ids: ids, owned: ownedEditor{index: index}}
}

func (e *shardEditor) get(id uint32) *shardEntry { return e.st.Shards.at(id) }

// edit returns a writable copy of shard id's entry. A directory or page is
// private to this command once it differs from the one the original root
// leads to.
func (e *shardEditor) edit(id uint32) *shardEntry {
	if e.orig == nil {
		e.orig = e.st.Shards
		e.st.Shards = append(shardTable(nil), e.orig...)
	}
	d, p, i := split(id)
	dir := e.st.Shards[d]
	if dir == e.orig[d] {
		nd := *dir
		dir = &nd
		e.st.Shards[d] = dir
	}
	if dir[p] == e.orig[d][p] {
		np := *dir[p]
		dir[p] = &np
	}
	e.changed++
	if e.ids != nil {
		*e.ids = append(*e.ids, id)
	}
	return &dir[p][i]
}

// put replaces shard id's entry with ne, keeping the owned index: use it
// (not edit) for every change of owner.
func (e *shardEditor) put(id uint32, ne shardEntry) {
	if o := e.get(id).owner; o != nil {
		e.owned.mark(e.st, o, id, false)
	}
	if ne.owner != nil {
		e.owned.mark(e.st, ne.owner, id, true)
	}
	*e.edit(id) = ne
}

// done records the index of the last change to the table.
func (e *shardEditor) done(index uint64) {
	e.owned.done(e.st)
	if e.changed > 0 {
		e.st.ShardsIndex = index
	}
}

// entry returns shard id's entry, or nil when id is out of range.
func (v *View) entry(id uint32) *shardEntry {
	if id >= v.st.Cluster.Shards || len(v.st.Shards) == 0 {
		return nil
	}
	return v.st.Shards.at(id)
}

// Shard returns shard id's entry, without allocating; ok is false when id
// is out of range or the cluster is not initialised.
func (v *View) Shard(id uint32) (Shard, bool) {
	e := v.entry(id)
	if e == nil {
		return Shard{}, false
	}
	return e.shard(id), true
}

// ShardOwner returns shard id's owning session, the token of its grant and
// whether it is being revoked, with one table read and no allocation: the
// read behind ownership lookups. The session is nil when the shard is free
// or id is out of range. It is the session as it was when the shard was
// granted (its ID, node name, node ID and address never change; Drained
// may have since), shared and immutable: callers must not modify it.
func (v *View) ShardOwner(id uint32) (owner *Session, token uint64, revoking bool) {
	if id >= v.st.Cluster.Shards || len(v.st.Shards) == 0 {
		return nil, 0, false
	}
	e := v.st.Shards.at(id)
	return e.owner, e.token, e.rev != nil
}

// ShardRef returns a pointer to a copy of shard id's entry, or nil when id
// is out of range. It allocates the copy.
//
// Deprecated: use Shard, which does not allocate.
func (v *View) ShardRef(id uint32) *Shard {
	s, ok := v.Shard(id)
	if !ok {
		return nil
	}
	return &s
}

// ShardCount returns the cluster's shard count (0 before InitCluster).
func (v *View) ShardCount() int {
	if len(v.st.Shards) == 0 {
		return 0
	}
	return int(v.st.Cluster.Shards)
}

// ShardsIndex returns the raft index of the last change to the shard table:
// two views with the same ShardsIndex have the same table.
func (v *View) ShardsIndex() uint64 { return v.st.ShardsIndex }

// EachShard calls fn for every shard in order until fn returns false. It
// does not allocate.
func (v *View) EachShard(fn func(Shard) bool) {
	n := uint32(v.ShardCount())
	id := uint32(0)
	for _, dir := range v.st.Shards {
		for _, page := range dir {
			if page == nil {
				return
			}
			for i := range page {
				if id >= n || !fn(page[i].shard(id)) {
					return
				}
				id++
			}
		}
	}
}

// Shards returns a copy of the whole shard table, in shard order.
func (v *View) Shards() []Shard {
	out := make([]Shard, 0, v.ShardCount())
	v.EachShard(func(s Shard) bool { out = append(out, s); return true })
	return out
}

// shardsFromWire rebuilds the shard table of a snapshot and checks it
// against the sessions and the token counter. Each owned shard points at
// its owner's session; an owner whose recorded node, node ID or address
// differ from the session's (which no release writes) gets an owner of its
// own, shared by the shards that record the same.
func shardsFromWire(st *state, shards []Shard) error {
	n := st.Cluster.Shards
	if st.Cluster.ID == "" {
		if len(shards) != 0 {
			return fmt.Errorf("%w: shards without a cluster", ErrMalformed)
		}
		return nil
	}
	if n == 0 || n > MaxShards {
		return fmt.Errorf("%w: shard count %d", ErrMalformed, n)
	}
	st.Shards = newShardTable(n)
	if len(shards) == 0 {
		return nil
	}
	if len(shards) != int(n) {
		return fmt.Errorf("%w: %d shards in snapshot, want %d", ErrMalformed, len(shards), n)
	}
	// ownerKey is what a shard copies of its owner; Session itself is not
	// comparable (its Marks are a slice).
	type ownerKey struct{ id, node, nodeID, addr string }
	var odd map[ownerKey]*Session
	revs := map[revocation]*revocation{}
	for i := range shards {
		s := &shards[i]
		sess, owned := st.Sessions[s.Owner]
		if !shardRepresentable(s, owned, st.LastToken) || s.ID != uint32(i) {
			return fmt.Errorf("%w: shard %d is inconsistent", ErrMalformed, i)
		}
		e := shardEntry{token: s.Token, granted: s.Granted}
		if s.State != ShardFree {
			e.owner = sess
			if key := (ownerKey{s.Owner, s.OwnerNode, s.OwnerNodeID, s.OwnerAddr}); key.node != sess.Node ||
				key.nodeID != sess.NodeID || key.addr != sess.Addr {
				if odd == nil {
					odd = map[ownerKey]*Session{}
				}
				if odd[key] == nil {
					odd[key] = &Session{ID: key.id, Node: key.node, NodeID: key.nodeID, Addr: key.addr}
				}
				e.owner = odd[key]
			}
		}
		if s.State == ShardRevoking {
			key := revocation{index: s.Revoked, to: s.To}
			if revs[key] == nil {
				revs[key] = &key
			}
			e.rev = revs[key]
		}
		*st.Shards.at(uint32(i)) = e
	}
	st.owned = buildOwned(st.Shards, n)
	return nil
}

// shardRepresentable reports whether a snapshot's shard is one the table
// can hold: a known state, a token already issued, an owner that is a
// session unless free, nothing of an owner on a free shard, and nothing of
// a revoke on a shard that is not revoking.
func shardRepresentable(s *Shard, ownerIsSession bool, lastToken uint64) bool {
	switch {
	case s.Token > lastToken, s.State > ShardRevoking:
		return false
	case s.State == ShardFree:
		return s.Owner == "" && s.OwnerNode == "" && s.OwnerNodeID == "" && s.OwnerAddr == "" && s.Revoked == 0 && s.To == ""
	case !ownerIsSession:
		return false
	case s.State == ShardOwned:
		return s.Revoked == 0 && s.To == ""
	}
	return true
}
