package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// LeaseInfo describes one held named lease, as a replica shows it.
type LeaseInfo struct {
	// Name is the lease's name.
	Name string
	// Holder is who holds it, with the token of its grant.
	Holder Holder
	// Waiters is the number of sessions queued for the lease.
	Waiters int
}

// Leases lists every held named lease from the local replica, sorted by
// name.
func (c *Coordinator) Leases() []LeaseInfo {
	return leases.List(c.fsm.View(), func(name string, h leases.Holder, waiters int) LeaseInfo {
		return LeaseInfo{Name: name, Holder: Holder(h), Waiters: waiters}
	})
}

// ShardState is a shard's place in its ownership cycle.
type ShardState string

// The shard states.
const (
	ShardFree     ShardState = "free"
	ShardOwned    ShardState = "owned"
	ShardRevoking ShardState = "revoking"
)

// ShardInfo describes one shard in a table version.
type ShardInfo struct {
	// Shard is the shard described.
	Shard ShardID
	// State is where the shard is in its ownership cycle.
	State ShardState
	// Owner is who owns the shard, unless State is ShardFree; Owner.Token is
	// the token of the current grant, or of the last one when the shard is
	// free (the other fields are then empty).
	Owner Holder
}

// Table returns the current version of the shard table from the local
// replica (an empty table before the cluster exists).
func (c *Coordinator) Table() *ShardTable { return &ShardTable{v: c.fsm.View()} }

// Shard describes shard s in this version; ok is false when s is out of
// range.
func (t *ShardTable) Shard(s ShardID) (ShardInfo, bool) {
	sh, ok := t.v.Shard(uint32(s))
	if !ok {
		return ShardInfo{}, false
	}
	info := ShardInfo{Shard: s, State: ShardState(sh.State.String())}
	info.Owner, _ = ownerIn(t.v, s) // the owning session, if any
	info.Owner.Token = sh.Token
	return info, true
}

// SessionInfo describes this node's current session.
type SessionInfo struct {
	ID string
	// Remaining is how long this node may still believe in the session
	// without another answered keepalive.
	Remaining time.Duration
	Drained   bool
}

// Session returns this node's live session; ok is false while it has none.
func (c *Coordinator) Session() (SessionInfo, bool) {
	s, _ := c.currentSession()
	if s == nil {
		return SessionInfo{}, false
	}
	info := SessionInfo{ID: s.ID(), Remaining: s.Remaining()}
	if fs, ok := c.fsm.View().Session(s.ID()); ok {
		info.Drained = fs.Drained
	}
	return info, true
}

// ErrNotReady is wrapped by Ready's error.
var ErrNotReady = errors.New("holdfast: not ready")

// Ready returns nil when this node is a member of a formed cluster that
// has a raft leader and this node holds a live session; otherwise an error
// wrapping ErrNotReady that says what is missing.
func (c *Coordinator) Ready() error {
	switch {
	case c.closing():
		return wire.Wrap(ErrNotReady, ErrShutdown)
	case c.fsm.View().Cluster().ID == "":
		return fmt.Errorf("%w: not a member of a formed cluster yet (%s)", ErrNotReady, c.Formation().Progress)
	}
	if _, ok := c.RaftLeader(); !ok {
		return fmt.Errorf("%w: no raft leader known", ErrNotReady)
	}
	if _, ok := c.Session(); !ok {
		return fmt.Errorf("%w: no live session", ErrNotReady)
	}
	return nil
}
