package fsm

import (
	"fmt"
	"math"
)

// MaxShards bounds the shard count an InitCluster command may ask for.
const MaxShards = 1 << 20

// MaxShardItems bounds the items of one shard command.
const MaxShardItems = 4096

// ShardState is where a shard is in its ownership cycle.
type ShardState uint8

// The shard states. Values are part of the snapshot format.
const (
	// ShardFree: nobody owns the shard; the leader may grant it.
	ShardFree ShardState = 0
	// ShardOwned: a session owns the shard under its token.
	ShardOwned ShardState = 1
	// ShardRevoking: the leader asked the owner to hand the shard off; the
	// owner still owns it until it releases it, its session ends, or the
	// leader forces it free a full TTL after the revoke.
	ShardRevoking ShardState = 2
)

// String returns the state's name.
func (s ShardState) String() string {
	switch s {
	case ShardFree:
		return "free"
	case ShardOwned:
		return "owned"
	case ShardRevoking:
		return "revoking"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Shard is one entry of the shard table.
type Shard struct {
	// ID is the shard's number, in [0, Cluster.Shards).
	ID uint32 `msgpack:"id"`
	// State says whether the shard is free, owned or being revoked.
	State ShardState `msgpack:"state"`
	// Owner is the owning session (empty when free); OwnerNode,
	// OwnerNodeID and OwnerAddr are copied from that session at grant.
	Owner       string `msgpack:"owner,omitempty"`
	OwnerNode   string `msgpack:"node,omitempty"`
	OwnerNodeID string `msgpack:"nid,omitempty"`
	OwnerAddr   string `msgpack:"addr,omitempty"`
	// Token is the fencing token of the current grant; a free shard keeps
	// the token of its last grant.
	Token uint64 `msgpack:"token,omitempty"`
	// Granted is the raft index of the current grant.
	Granted uint64 `msgpack:"granted,omitempty"`
	// Revoked is the raft index of the revoke, while revoking.
	Revoked uint64 `msgpack:"revoked,omitempty"`
	// To is the session the leader means to hand the shard to, while
	// revoking (advisory: the grant that follows the release decides).
	To string `msgpack:"to,omitempty"`
}

// shardPageSize is the number of shards per copy-on-write page: a command
// that changes one shard copies one page and the page index, not the table.
const shardPageSize = 128

type shardPage [shardPageSize]Shard

// ShardCmd is the body of OpShardGrant, OpShardRevoke and OpShardRelease:
// a batch of items, each applied on its own. An item whose precondition
// does not hold (the shard is no longer in the expected state, owner or
// token) is skipped; Result.Count says how many took effect.
type ShardCmd struct {
	// Force, on release, marks the leader's forced release of revoking
	// shards whose owner did not release them within a full TTL.
	Force bool        `msgpack:"force,omitempty"`
	Items []ShardItem `msgpack:"items"`
}

// ShardItem is one shard of a ShardCmd.
type ShardItem struct {
	// Shard is the shard's number.
	Shard uint32 `msgpack:"s"`
	// Session is, on grant, the new owner; on revoke and release, the
	// current owner.
	Session string `msgpack:"sess"`
	// Token is, on revoke and release, the current grant's token.
	Token uint64 `msgpack:"tok,omitempty"`
	// To is, on revoke, the session the leader means to hand the shard to.
	To string `msgpack:"to,omitempty"`
}

// newShardTable returns n free shards.
func newShardTable(n uint32) []*shardPage {
	pages := make([]*shardPage, (int(n)+shardPageSize-1)/shardPageSize)
	for p := range pages {
		pages[p] = new(shardPage)
		for i := range pages[p] {
			pages[p][i].ID = uint32(p*shardPageSize + i)
		}
	}
	return pages
}

// shardEditor changes shards of a state copy-on-write: the page index and
// each touched page are copied once per command.
type shardEditor struct {
	st      *state
	copied  bool
	touched map[int]bool
	changed int
}

func (e *shardEditor) get(id uint32) *Shard {
	return &e.st.Shards[id/shardPageSize][id%shardPageSize]
}

// edit returns a writable copy of shard id.
func (e *shardEditor) edit(id uint32) *Shard {
	if !e.copied {
		e.st.Shards = append([]*shardPage(nil), e.st.Shards...)
		e.touched = map[int]bool{}
		e.copied = true
	}
	p := int(id / shardPageSize)
	if !e.touched[p] {
		np := *e.st.Shards[p]
		e.st.Shards[p] = &np
		e.touched[p] = true
	}
	e.changed++
	return &e.st.Shards[p][id%shardPageSize]
}

// done records the index of the last change to the table.
func (e *shardEditor) done(index uint64) {
	if e.changed > 0 {
		e.st.ShardsIndex = index
	}
}

func validShardCmd(st state, c *ShardCmd) error {
	if len(c.Items) == 0 || len(c.Items) > MaxShardItems {
		return fmt.Errorf("%w: a shard command needs 1 to %d items", ErrMalformed, MaxShardItems)
	}
	if st.Cluster.ID == "" {
		return fmt.Errorf("%w: no cluster yet", ErrConflict)
	}
	for _, it := range c.Items {
		if it.Shard >= st.Cluster.Shards {
			return fmt.Errorf("%w: shard %d out of range [0, %d)", ErrMalformed, it.Shard, st.Cluster.Shards)
		}
		if err := validName("session ID", it.Session); err != nil {
			return err
		}
		if len(it.To) > MaxNameLength {
			return fmt.Errorf("%w: target session ID too long", ErrMalformed)
		}
	}
	return nil
}

// applyShardGrant grants each free shard to its item's session, which must
// exist and not be drained; every grant takes the next token.
func applyShardGrant(st state, index uint64, c *ShardCmd) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := shardEditor{st: &st}
	for _, it := range c.Items {
		sess, ok := st.Sessions[it.Session]
		if !ok || sess.Drained || e.get(it.Shard).State != ShardFree {
			continue
		}
		st.LastToken++
		s := e.edit(it.Shard)
		*s = Shard{ID: it.Shard, State: ShardOwned, Owner: sess.ID, OwnerNode: sess.Node, OwnerNodeID: sess.NodeID,
			OwnerAddr: sess.Addr, Token: st.LastToken, Granted: index}
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// applyShardRevoke marks each shard owned by the item's session under the
// item's token as revoking.
func applyShardRevoke(st state, index uint64, c *ShardCmd) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := shardEditor{st: &st}
	for _, it := range c.Items {
		if cur := e.get(it.Shard); cur.State != ShardOwned || cur.Owner != it.Session || cur.Token != it.Token {
			continue
		}
		s := e.edit(it.Shard)
		s.State, s.Revoked, s.To = ShardRevoking, index, it.To
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// applyShardRelease frees each shard owned by the item's session under the
// item's token. A forced release frees only revoking shards.
func applyShardRelease(st state, index uint64, c *ShardCmd) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := shardEditor{st: &st}
	for _, it := range c.Items {
		cur := e.get(it.Shard)
		if cur.State == ShardFree || cur.Owner != it.Session || cur.Token != it.Token ||
			(c.Force && cur.State != ShardRevoking) {
			continue
		}
		*e.edit(it.Shard) = Shard{ID: it.Shard, Token: cur.Token}
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// freeSessionShards frees every shard the session owns (its session ended).
func freeSessionShards(st state, index uint64, session string) state {
	e := shardEditor{st: &st}
	for p, page := range st.Shards {
		for i := range page {
			if page[i].State != ShardFree && page[i].Owner == session {
				id := uint32(p*shardPageSize + i)
				*e.edit(id) = Shard{ID: id, Token: page[i].Token}
			}
		}
	}
	e.done(index)
	return st
}

// applySessionDrain sets or clears a session's drained flag: a drained
// session is granted no shard, and the leader moves its shards away.
func applySessionDrain(st state, c *SessionCmd) (state, Result, error) {
	s, ok := st.Sessions[c.ID]
	if !ok {
		return st, Result{}, fmt.Errorf("%w: %s", ErrNoSession, c.ID)
	}
	if s.Drained == c.Drain {
		return st, Result{Noop: true}, nil
	}
	st.Sessions = cloneMap(st.Sessions)
	ns := *s
	ns.Drained = c.Drain
	st.Sessions[c.ID] = &ns
	return st, Result{}, nil
}

func validWeight(w float64) bool {
	return !math.IsNaN(w) && !math.IsInf(w, 0) && w >= 0
}

// Shard returns shard id's entry, without allocating; ok is false when id
// is out of range or the cluster is not initialised.
func (v *View) Shard(id uint32) (Shard, bool) {
	if id >= v.st.Cluster.Shards || int(id/shardPageSize) >= len(v.st.Shards) {
		return Shard{}, false
	}
	return v.st.Shards[id/shardPageSize][id%shardPageSize], true
}

// ShardRef returns a pointer to shard id's entry inside the view, or nil
// when id is out of range: the cheapest read, for hot paths. The entry is
// shared and immutable; callers must not modify it.
func (v *View) ShardRef(id uint32) *Shard {
	if id >= v.st.Cluster.Shards || int(id/shardPageSize) >= len(v.st.Shards) {
		return nil
	}
	return &v.st.Shards[id/shardPageSize][id%shardPageSize]
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
		if !fn(v.st.Shards[id/shardPageSize][id%shardPageSize]) {
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
// against the sessions and the token counter.
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
	for i, s := range shards {
		_, owned := st.Sessions[s.Owner]
		switch {
		case s.ID != uint32(i), s.Token > st.LastToken, s.State > ShardRevoking,
			s.State != ShardFree && !owned, s.State == ShardFree && s.Owner != "":
			return fmt.Errorf("%w: shard %d is inconsistent", ErrMalformed, i)
		}
		st.Shards[i/shardPageSize][i%shardPageSize] = s
	}
	return nil
}
