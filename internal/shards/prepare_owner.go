package shards

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// ErrNotTarget is the error of Manager.Prepare when the move's target is
// not this node's current session.
var ErrNotTarget = errors.New("holdfast: this node's session is not the target of the shard move")

// ErrAbandoned is the default of Errors.Abandoned.
var ErrAbandoned = errors.New("holdfast: the shard move was abandoned")

// ready is a shard this node prepares for a move from another session.
type ready struct {
	from   string // the owner's session
	token  uint64 // the owner's grant
	to     string // this node's session the move targets
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the Prepare callback returned
	hold   time.Time     // after it, a move that did not come is abandoned (zero: the leader still waits)
}

// Prepare runs the Prepare callback (Options.Prepare) for each of items
// (shard, owner session, owner's token) for a move to session to, this
// node's current session, and returns once every callback returned or
// wait passed, or ctx ended; it returns how many returned. A shard this
// node already prepares for the same move is not prepared again. Each
// callback's context ends (Errors.Abandoned) when the move cannot come: the
// replica shows the shard owned by a third session or under another
// grant, revoked toward another session, the session to ends, Abandon is
// called, or PrepareHold passed since the leader's wait ended while the
// shard was neither revoked toward to nor granted to it; it ends with
// context.Canceled once this node's lease on the shard started (after the
// Serve callback was called). Without Options.Prepare every shard is
// ready at once.
func (m *Manager[W]) Prepare(ctx context.Context, to string, items []fsm.ShardItem, wait time.Duration) (int, error) {
	if m.o.Prepare == nil {
		return len(items), nil
	}
	m.mu.Lock()
	s, _ := m.o.Session()
	if m.closed || s == nil || s.ID() != to {
		m.mu.Unlock()
		return 0, ErrNotTarget
	}
	if m.prepared == nil {
		m.prepared = map[ShardID]*ready{}
	}
	m.growLocked(m.o.View().ShardCount())
	var waits []chan struct{}
	for _, it := range items {
		id := ShardID(it.Shard)
		if int(id) >= len(m.leases) || m.leases[id] != nil {
			continue // out of range, or already this node's
		}
		r := m.prepared[id]
		if r != nil && (r.from != it.Session || r.token != it.Token) {
			r.cancel(m.o.Errors.Abandoned)
			delete(m.prepared, id)
			r = nil
		}
		if r == nil {
			r = m.startPrepareLocked(id, it.Session, it.Token, to)
		}
		r.hold = time.Time{}
		waits = append(waits, r.done)
	}
	m.mu.Unlock()
	n, err := m.waitPrepared(ctx, waits, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		return n, err // the leader must not take the shards for ready
	}
	hold := time.Now().Add(m.o.PrepareHold)
	for _, it := range items {
		if r := m.prepared[ShardID(it.Shard)]; r != nil && r.from == it.Session && r.token == it.Token && r.hold.IsZero() {
			r.hold = hold
		}
	}
	return n, nil
}

// startPrepareLocked runs the Prepare callback for shard id in a goroutine
// Close joins. Its context is ended by the Manager only (Sync, Abandon,
// Close), so that its cause says why: the session's end, too, is seen by
// Sync (the session changed) and ends it as abandoned.
func (m *Manager[W]) startPrepareLocked(id ShardID, from string, token uint64, to string) *ready {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &ready{from: from, token: token, to: to, cancel: cancel, done: make(chan struct{})}
	m.prepared[id] = r
	m.goLocked(func() {
		defer close(r.done)
		if err := m.o.Prepare(ctx, id, from, token); err != nil && ctx.Err() == nil {
			m.o.Log.Warn("shard prepare hook failed; the move goes on", "shard", id, "error", err)
		}
	})
	return r
}

// waitPrepared waits for every channel of waits, at most wait, and returns
// how many were closed; it fails when ctx ends or the Manager stops first
// (a callback that returned because its prepare ended is not ready).
func (m *Manager[W]) waitPrepared(ctx context.Context, waits []chan struct{}, wait time.Duration) (int, error) {
	timer := time.NewTimer(max(wait, time.Millisecond))
	defer timer.Stop()
	n := 0
	for _, w := range waits {
		select {
		case <-w:
			n++
			continue
		case <-timer.C:
			return n, nil
		case <-ctx.Done():
			return n, ctx.Err()
		case <-m.stop:
		case <-m.o.Stop:
		}
		return n, m.o.Errors.Shutdown
	}
	select {
	case <-m.stop:
		return n, m.o.Errors.Shutdown
	case <-m.o.Stop:
		return n, m.o.Errors.Shutdown
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return n, m.o.Errors.Shutdown
	}
	return n, nil
}

// Abandon ends the prepares of items for a move to session to (the leader
// no longer plans them).
func (m *Manager[W]) Abandon(to string, items []fsm.ShardItem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range items {
		id := ShardID(it.Shard)
		if r := m.prepared[id]; r != nil && r.to == to && r.from == it.Session && r.token == it.Token {
			r.cancel(m.o.Errors.Abandoned)
			delete(m.prepared, id)
		}
	}
}

// syncPreparedLocked ends the prepares that v (synced for the session
// sid, "": none) shows done or impossible, as Prepare says. It takes the
// ID, not the session: a nil *session.Session in an interface is not a nil
// interface, and the node without a session (its storage failing) once
// panicked here on that.
func (m *Manager[W]) syncPreparedLocked(v *fsm.View, sid string) {
	if len(m.prepared) == 0 {
		return
	}
	now := time.Now()
	for id, r := range m.prepared {
		sh, _ := v.Shard(uint32(id))
		cause := error(nil)
		switch {
		case m.closed:
			cause = m.o.Errors.Shutdown
		case sid == "" || sid != r.to:
			cause = m.o.Errors.Abandoned
		case sh.State != fsm.ShardFree && sh.Owner == r.to:
			cause = context.Canceled // granted here: the lease started
		case sh.State != fsm.ShardFree && (sh.Owner != r.from || sh.Token != r.token):
			cause = m.o.Errors.Abandoned
		case sh.State == fsm.ShardRevoking && sh.To != "" && sh.To != r.to:
			cause = m.o.Errors.Abandoned
		case sh.State == fsm.ShardRevoking:
			// The move is under way: the release or the forced release comes.
		case !r.hold.IsZero() && now.After(r.hold):
			cause = m.o.Errors.Abandoned
		}
		if cause != nil {
			r.cancel(cause)
			delete(m.prepared, id)
		}
	}
}

// endPreparedLocked ends every prepare with cause (at Close).
func (m *Manager[W]) endPreparedLocked(cause error) {
	for id, r := range m.prepared {
		r.cancel(cause)
		delete(m.prepared, id)
	}
}
