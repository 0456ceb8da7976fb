package shards

import (
	"context"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// FillSessionCmd fills the session-creation fields shard assignment uses:
// the node's address, weight and placement tags, and whether the session
// starts drained.
func (m *Manager[W]) FillSessionCmd(cmd *fsm.SessionCmd) {
	cmd.Addr = m.o.Addr
	cmd.Weight = m.o.Weight
	cmd.Tags = m.o.Tags
	cmd.Drain = m.drained.Load()
}

// StartDrained makes the sessions this node opens from now on start
// drained (a node that never owns shards calls it before its first).
func (m *Manager[W]) StartDrained() { m.drained.Store(true) }

// SetDrained records the drained flag locally (sessions opened later start
// with it) and commits it for the current session, waiting for one if
// there is none. A session the cluster no longer knows is ended (the next
// one is created with the flag).
func (m *Manager[W]) SetDrained(ctx context.Context, drained bool) error {
	m.drained.Store(drained)
	for {
		s, err := m.waitSession(ctx)
		if err != nil {
			return err
		}
		err = m.o.Commit(ctx, fsm.Command{Op: fsm.OpSessionDrain, Session: &fsm.SessionCmd{ID: s.ID(), Drain: drained}})
		if err != nil && m.o.IsNoSession(err) {
			s.End(session.ErrExpired)
			continue
		}
		return err
	}
}

// waitSession blocks until this node has a valid session.
func (m *Manager[W]) waitSession(ctx context.Context) (*session.Session, error) {
	for {
		s, changed := m.o.Session()
		if s != nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.o.Stop:
			return nil, m.o.Errors.Shutdown
		case <-changed:
		}
	}
}

// WaitNoShards waits until the replica shows no shard owned by this node
// (any of its sessions) and no local lease or release is left. It fails
// with ctx's error (saying how many leases are left), or Errors.Shutdown
// once Options.Stop is closed.
func (m *Manager[W]) WaitNoShards(ctx context.Context) error {
	for {
		v := m.o.View()
		leases, releasing, changed := m.state()
		if leases == 0 && releasing == 0 && !m.ownsAny(v) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("holdfast: %d shards still owned: %w", leases, ctx.Err())
		case <-m.o.Stop:
			return m.o.Errors.Shutdown
		case <-v.Changed():
		case <-changed:
		}
	}
}

// ownsAny reports whether v shows a shard owned by this node.
func (m *Manager[W]) ownsAny(v *fsm.View) bool {
	found := false
	v.EachShard(func(s fsm.Shard) bool {
		found = s.State != fsm.ShardFree && s.OwnerNodeID == m.o.NodeID
		return !found
	})
	return found
}

// HandOff is a graceful shutdown's first step: it drains the node's shards
// to the other nodes so none is left unowned for longer than its drain,
// waiting at most 2 × SessionTTL + DrainTimeout + PrepareTimeout, then
// waits (at most DrainTimeout more) until the shards it released are
// granted again: on the raft leader, whose stop hands leadership on next,
// so the grants are its balancer's, not a new leader's first round's. It
// does nothing when this node owns no shard or no other node could take
// them.
func (m *Manager[W]) HandOff(ctx context.Context) error {
	v := m.o.View()
	if !m.ownsAny(v) || !m.otherShardOwner(v) {
		return nil
	}
	mine := m.ownedShards(v)
	hctx, cancel := context.WithTimeout(ctx, 2*m.o.SessionTTL+m.o.DrainTimeout+m.o.PrepareTimeout)
	defer cancel()
	if err := m.SetDrained(hctx, true); err != nil {
		return err
	}
	if err := m.WaitNoShards(hctx); err != nil {
		return err
	}
	m.waitRegranted(ctx, mine)
	return nil
}

// ownedShards lists the shards v shows owned by this node.
func (m *Manager[W]) ownedShards(v *fsm.View) []uint32 {
	var out []uint32
	v.EachShard(func(s fsm.Shard) bool {
		if s.State != fsm.ShardFree && s.OwnerNodeID == m.o.NodeID {
			out = append(out, s.ID)
		}
		return true
	})
	return out
}

// waitRegranted waits until none of ids is free, at most DrainTimeout or
// until ctx ends or the node stops; it gives up quietly (nothing is
// wrong: the next leader grants them).
func (m *Manager[W]) waitRegranted(ctx context.Context, ids []uint32) {
	t := time.NewTimer(m.o.DrainTimeout)
	defer t.Stop()
	for {
		v := m.o.View()
		free := false
		for _, id := range ids {
			if sh, _ := v.Shard(id); sh.State == fsm.ShardFree {
				free = true
				break
			}
		}
		if !free {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-m.o.Stop:
			return
		case <-t.C:
			return
		case <-v.Changed():
		}
	}
}

// otherShardOwner reports whether another node has a session that may own
// shards.
func (m *Manager[W]) otherShardOwner(v *fsm.View) bool {
	for _, s := range v.Sessions() {
		if s.NodeID != m.o.NodeID && !s.Drained {
			return true
		}
	}
	return false
}
