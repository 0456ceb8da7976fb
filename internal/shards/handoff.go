package shards

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// revokeLocked freezes a revoked lease's belief (keepalives no longer
// extend it) and starts its handoff.
func (m *Manager[W]) revokeLocked(h *held[W]) {
	select {
	case <-h.revoked:
		return
	default:
	}
	close(h.revoked)
	h.life.CapAt(func(at time.Time) { h.life.End(m.o.Errors.Lost, at, nil) })
	m.releases[h.shard] = h.token
	m.goLocked(func() { m.handoff(h) })
}

// handoff drains a revoked shard through the Release callback, ends the
// lease (Errors.Revoked) and commits the release. It waits for the Acquire
// callback to return first, at most DrainTimeout after the handoff began.
func (m *Manager[W]) handoff(h *held[W]) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.life.Context(), m.o.DrainTimeout)
	if err := m.o.Release(ctx, h.w); err != nil {
		m.o.Log.Warn("shard release hook failed", "shard", h.shard, "token", h.token, "error", err)
	}
	cancel()
	h.end(m.o.Errors.Revoked)
	wait := time.NewTimer(max(m.o.DrainTimeout-time.Since(start), time.Millisecond))
	select {
	case <-h.hookDone:
	case <-wait.C:
		m.o.Log.Warn("shard acquire hook still running after the lease ended", "shard", h.shard)
	}
	wait.Stop()
	m.commitRelease(h.life.Session(), h.shard, h.token)
}

// releaseLocked commits the release of a shard this node never believed.
func (m *Manager[W]) releaseLocked(s *session.Session, id ShardID, token uint64) {
	m.releases[id] = token
	m.goLocked(func() { m.commitRelease(s, id, token) })
}

// commitRelease commits the release of (id, token) by s, retrying while
// the outcome is unknown; the session's end makes it moot.
func (m *Manager[W]) commitRelease(s *session.Session, id ShardID, token uint64) {
	defer func() {
		m.mu.Lock()
		if m.releases[id] == token {
			delete(m.releases, id)
			m.notifyLocked() // WaitNoShards counts releases under way
		}
		if m.ended[id] < token {
			m.ended[id] = token
		}
		m.mu.Unlock()
	}()
	err := m.o.Commit(s.Context(), fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{
		Items: []fsm.ShardItem{{Shard: uint32(id), Session: s.ID(), Token: token}},
	}})
	if err != nil && !m.o.IsNoSession(err) && s.Context().Err() == nil {
		m.o.Log.Warn("committing a shard release failed; the leader forces it after a TTL",
			"shard", id, "token", token, "error", err)
	}
}
