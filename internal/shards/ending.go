package shards

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
)

// end ends lease h with cause, at (zero: now), and forgets it; m.mu is not
// held. A lease whose belief already ended (its session's end) is
// forgotten all the same, the first time.
func (m *Manager[W]) end(h *held[W], cause error, at time.Time) {
	h.life.End(cause, at, func() { m.forget(h) })
}

// endLocked is end, now, with m.mu held.
func (m *Manager[W]) endLocked(h *held[W], cause error) {
	h.life.End(cause, time.Time{}, func() { m.forgetLocked(h) })
}

// forget drops an ended lease, remembers its token so it is never believed
// again, and reports its end (Options.Ended).
func (m *Manager[W]) forget(h *held[W]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(h)
}

func (m *Manager[W]) forgetLocked(h *held[W]) {
	if m.ended[h.shard] < h.token {
		m.ended[h.shard] = h.token
	}
	if m.leases[h.shard] == h {
		m.leases[h.shard] = nil
		m.nLeases--
		m.notifyLocked()
	}
	if m.o.Ended != nil {
		m.o.Ended(h.w, h.life.Cause())
	}
}

// watchLocked arranges, once per session, for the leases of s to be ended
// and forgotten when s ends. Close stops the watches and joins those that
// run.
func (m *Manager[W]) watchLocked(s *session.Session) {
	if _, ok := m.watches[s]; ok {
		return
	}
	m.wg.Add(1)
	m.watches[s] = context.AfterFunc(s.Context(), func() {
		defer m.wg.Done()
		m.sessionEnded(s)
	})
}

// sessionEnded ends and forgets the leases of s, which ended.
func (m *Manager[W]) sessionEnded(s *session.Session) {
	m.mu.Lock()
	delete(m.watches, s)
	var all []*held[W]
	for _, h := range m.leases {
		if h != nil && h.life.Session() == s {
			all = append(all, h)
		}
	}
	m.mu.Unlock()
	for _, h := range all {
		m.end(h, m.o.Errors.Lost, time.Time{}) // the session's cause stands
	}
}

// End ends every lease with cause and stops creating new ones; handoffs
// under way go on. It does not wait: Close does.
func (m *Manager[W]) End(cause error) {
	m.mu.Lock()
	m.closed = true
	all := make([]*held[W], 0, m.nLeases)
	for _, h := range m.leases {
		if h != nil {
			all = append(all, h)
		}
	}
	m.mu.Unlock()
	for _, h := range all {
		m.end(h, cause, time.Time{})
	}
}

// Close ends every lease with Errors.Shutdown, stops following the replica
// and waits for every goroutine the Manager started: the Acquire and
// HandOff callbacks (which must return once their context ends) and the
// commits of releases (which end with their session). It is safe to call
// more than once.
func (m *Manager[W]) Close() {
	m.End(m.o.Errors.Shutdown)
	m.mu.Lock()
	m.endPreparedLocked(m.o.Errors.Shutdown)
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	for s, stop := range m.watches {
		if stop() {
			delete(m.watches, s)
			m.wg.Done()
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}
