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
func applyShardGrant(st state, index uint64, c *ShardCmd, changed *[]uint32) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := newShardEditor(&st, index, changed)
	for _, it := range c.Items {
		sess, ok := st.Sessions[it.Session]
		if !ok || sess.Drained || e.get(it.Shard).owner != nil {
			continue
		}
		st.LastToken++
		e.put(it.Shard, shardEntry{owner: sess, token: st.LastToken, granted: index})
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// applyShardRevoke marks each shard owned by the item's session under the
// item's token as revoking.
func applyShardRevoke(st state, index uint64, c *ShardCmd, changed *[]uint32) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := newShardEditor(&st, index, changed)
	var last *revocation // shared by consecutive items with the same target
	for _, it := range c.Items {
		if cur := e.get(it.Shard); cur.state() != ShardOwned || cur.owner.ID != it.Session || cur.token != it.Token {
			continue
		}
		if last == nil || last.to != it.To {
			last = &revocation{index: index, to: it.To}
		}
		e.edit(it.Shard).rev = last
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// applyShardRelease frees each shard owned by the item's session under the
// item's token. A forced release frees only revoking shards.
func applyShardRelease(st state, index uint64, c *ShardCmd, changed *[]uint32) (state, Result, error) {
	if err := validShardCmd(st, c); err != nil {
		return st, Result{}, err
	}
	e := newShardEditor(&st, index, changed)
	for _, it := range c.Items {
		cur := e.get(it.Shard)
		if cur.owner == nil || cur.owner.ID != it.Session || cur.token != it.Token || (c.Force && cur.rev == nil) {
			continue
		}
		e.put(it.Shard, shardEntry{token: cur.token})
	}
	e.done(index)
	return st, Result{Count: e.changed, Noop: e.changed == 0}, nil
}

// freeSessionShards frees every shard the session owns (its session
// ended), in shard order, at a cost that follows their number: the owned
// index lists them.
func freeSessionShards(st state, index uint64, session string, changed *[]uint32) state {
	set := st.owned.get(session)
	if set == nil {
		return st
	}
	e := newShardEditor(&st, index, changed)
	set.each(func(id uint32) { e.put(id, shardEntry{token: e.get(id).token}) })
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
