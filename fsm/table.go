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

// shardPageSize is the number of shards per copy-on-write page: a command
// that changes one shard copies one page (4 KiB) and the page index, not
// the table.
const shardPageSize = 128

type shardPage [shardPageSize]shardEntry

// newShardTable returns n free shards.
func newShardTable(n uint32) []*shardPage {
	pages := make([]*shardPage, (int(n)+shardPageSize-1)/shardPageSize)
	for p := range pages {
		pages[p] = new(shardPage)
	}
	return pages
}

// shardEditor changes shards of a state copy-on-write: the page index and
// each touched page are copied once per command.
type shardEditor struct {
	st      *state
	orig    []*shardPage // the page index before the first edit
	ids     *[]uint32    // the changed shards are appended here (if set)
	changed int
}

func (e *shardEditor) get(id uint32) *shardEntry {
	return &e.st.Shards[id/shardPageSize][id%shardPageSize]
}

// edit returns a writable copy of shard id's entry. A page is private to
// this command once it differs from the page the original index holds.
func (e *shardEditor) edit(id uint32) *shardEntry {
	if e.orig == nil {
		e.orig = e.st.Shards
		e.st.Shards = append([]*shardPage(nil), e.st.Shards...)
	}
	p := int(id / shardPageSize)
	if e.st.Shards[p] == e.orig[p] {
		np := *e.orig[p]
		e.st.Shards[p] = &np
	}
	e.changed++
	if e.ids != nil {
		*e.ids = append(*e.ids, id)
	}
	return &e.st.Shards[p][id%shardPageSize]
}

// done records the index of the last change to the table.
func (e *shardEditor) done(index uint64) {
	if e.changed > 0 {
		e.st.ShardsIndex = index
	}
}

// entry returns shard id's entry, or nil when id is out of range.
func (v *View) entry(id uint32) *shardEntry {
	if id >= v.st.Cluster.Shards || int(id/shardPageSize) >= len(v.st.Shards) {
		return nil
	}
	return &v.st.Shards[id/shardPageSize][id%shardPageSize]
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
	if id >= v.st.Cluster.Shards || int(id/shardPageSize) >= len(v.st.Shards) {
		return nil, 0, false
	}
	e := &v.st.Shards[id/shardPageSize][id%shardPageSize]
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
	n := v.ShardCount()
	for id := 0; id < n; id++ {
		if !fn(v.st.Shards[id/shardPageSize][id%shardPageSize].shard(uint32(id))) {
			return
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
	var odd map[Session]*Session
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
			if key := (Session{ID: s.Owner, Node: s.OwnerNode, NodeID: s.OwnerNodeID, Addr: s.OwnerAddr}); key.Node != sess.Node ||
				key.NodeID != sess.NodeID || key.Addr != sess.Addr {
				if odd == nil {
					odd = map[Session]*Session{}
				}
				if odd[key] == nil {
					odd[key] = &key
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
		st.Shards[i/shardPageSize][i%shardPageSize] = e
	}
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
