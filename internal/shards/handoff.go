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
	if h.revoked.fired() {
		return
	}
	h.revoked.fire(&m.fired)
	h.life.CapAt(func(at time.Time) { m.end(h, m.o.Errors.Lost, at) })
	m.releases[h.shard] = h.token
	m.goLocked(func() { m.handoff(h) })
}

// handoff drains a revoked shard through the HandOff callback, ends the
// lease (Errors.Revoked) and commits the release. It waits for the Acquire
// callback to return first, at most DrainTimeout after the handoff began.
func (m *Manager[W]) handoff(h *held[W]) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.life.Context(), m.o.DrainTimeout)
	if err := m.o.HandOff(ctx, h.w); err != nil {
		m.o.Log.Warn("shard hand-off callback failed", "shard", h.shard, "token", h.token, "error", err)
	}
	cancel()
	m.end(h, m.o.Errors.Revoked, time.Time{})
	wait := time.NewTimer(max(m.o.DrainTimeout-time.Since(start), time.Millisecond))
	select {
	case <-h.hookDone.wait():
	case <-wait.C:
		m.o.Log.Warn("shard acquire hook still running after the lease ended", "shard", h.shard)
	}
	wait.Stop()
	m.commitRelease(h.life.Session(), h.shard, h.token)
}

// release is a shard release waiting to be committed: shard id, granted
// to session s under token.
type release struct {
	s     *session.Session
	id    ShardID
	token uint64
}

// releaseLocked commits the release of a shard this node never believed.
func (m *Manager[W]) releaseLocked(s *session.Session, id ShardID, token uint64) {
	m.releases[id] = token
	m.queueLocked(release{s: s, id: id, token: token})
}

// commitRelease commits the release of (id, token) by s, with the other
// releases waiting then.
func (m *Manager[W]) commitRelease(s *session.Session, id ShardID, token uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queueLocked(release{s: s, id: id, token: token})
}

// queueLocked queues r for the releaser, starting it if it is not running.
// Releases that queue up while the releaser commits go out together in
// its next command, so a drain of many shards costs a few commands rather
// than one per shard.
func (m *Manager[W]) queueLocked(r release) {
	m.pending = append(m.pending, r)
	if !m.flushing {
		m.flushing = true
		m.goLocked(m.releaser)
	}
}

// releaser commits the queued releases, batched per session, until the
// queue is empty.
func (m *Manager[W]) releaser() {
	for {
		m.mu.Lock()
		batch := m.pending
		m.pending = nil
		if len(batch) == 0 {
			m.flushing = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		for len(batch) > 0 {
			s := batch[0].s
			var items []fsm.ShardItem
			rest := batch[:0]
			for _, r := range batch {
				if r.s == s {
					items = append(items, fsm.ShardItem{Shard: uint32(r.id), Session: s.ID(), Token: r.token})
				} else {
					rest = append(rest, r)
				}
			}
			batch = rest
			for _, chunk := range chunkItems(items) {
				m.commitReleases(s, chunk)
			}
		}
	}
}

// commitReleases commits the release of items by s in one command,
// retrying while the outcome is unknown; the session's end makes it moot.
func (m *Manager[W]) commitReleases(s *session.Session, items []fsm.ShardItem) {
	err := m.o.Commit(s.Context(), fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{Items: items}})
	if err != nil && !m.o.IsNoSession(err) && s.Context().Err() == nil {
		m.o.Log.Warn("committing a shard release failed; the leader forces it after a TTL",
			"shards", len(items), "first", items[0].Shard, "token", items[0].Token, "error", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range items {
		id := ShardID(it.Shard)
		if m.releases[id] == it.Token {
			delete(m.releases, id)
		}
		if m.ended[id] < it.Token {
			m.ended[id] = it.Token
		}
	}
	m.notifyLocked() // WaitNoShards counts releases under way
}
