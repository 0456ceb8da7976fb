package coordinator

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// ShardHandler is told about this node's shard leases. Both methods are
// called from goroutines of their own; they may block, but must return
// once their context ends.
type ShardHandler interface {
	// Acquire is called when this node starts owning a shard. ctx is the
	// lease's context: it ends the moment the lease ends (handoff, loss,
	// shutdown). Acquire may return at once or run the shard's work until
	// ctx ends.
	Acquire(ctx context.Context, l *ShardLease)
	// Release is called when the leader asks this node to hand the shard
	// off, while the lease is still held: drain in-flight work, then
	// return. ctx ends after Config.ShardDrainTimeout or when the lease's
	// belief ends, whichever comes first. When Release returns, the lease
	// ends (cause ErrRevoked) and the release is committed; an error is
	// logged and changes nothing else.
	Release(ctx context.Context, l *ShardLease) error
}

// HandlerFuncs adapts two functions to a ShardHandler; a nil function is a
// no-op.
type HandlerFuncs struct {
	AcquireFunc func(ctx context.Context, l *ShardLease)
	ReleaseFunc func(ctx context.Context, l *ShardLease) error
}

// Acquire calls AcquireFunc, if set.
func (h HandlerFuncs) Acquire(ctx context.Context, l *ShardLease) {
	if h.AcquireFunc != nil {
		h.AcquireFunc(ctx, l)
	}
}

// Release calls ReleaseFunc, if set.
func (h HandlerFuncs) Release(ctx context.Context, l *ShardLease) error {
	if h.ReleaseFunc != nil {
		return h.ReleaseFunc(ctx, l)
	}
	return nil
}

// ShardLease is this node's ownership of one shard. Like a Lease, its
// context ends the moment this node's belief ends: at its session's
// holder-side deadline, when the shard is handed off (ErrRevoked), when
// the replica shows another owner, or on Shutdown. Once the leader revokes
// the shard, keepalives no longer extend it.
type ShardLease struct {
	belief
	shard    ShardID
	revoked  chan struct{} // closed when the leader's revoke is seen
	hookDone chan struct{} // closed when Handler.Acquire returned
}

// Shard returns the shard this lease owns.
func (l *ShardLease) Shard() ShardID { return l.shard }

// Revoked returns a channel closed once the leader has asked this node to
// hand the shard off; the lease still holds until the handoff ends it.
func (l *ShardLease) Revoked() <-chan struct{} { return l.revoked }

// shardMgr is the owner side of shard ownership on every node: it turns the
// replica's shard table into ShardLeases, runs the handler, and hands
// shards off when the leader revokes them.
type shardMgr struct {
	c *Coordinator

	mu       sync.Mutex
	closed   bool
	leases   map[ShardID]*ShardLease
	ended    map[ShardID]uint64    // highest token this node stopped believing, per shard
	releases map[ShardID]uint64    // releases under way (token)
	freeSeen map[ShardID]time.Time // when this node first saw each shard free (acquire-wait metric)
	synced   uint64                // index of the newest view synced
	scanned  uint64                // ShardsIndex of the last full scan
	scanSess string                // session of the last full scan
	changed  chan struct{}         // closed and replaced when leases change
}

func newShardMgr(c *Coordinator) *shardMgr {
	return &shardMgr{c: c, leases: map[ShardID]*ShardLease{}, ended: map[ShardID]uint64{},
		releases: map[ShardID]uint64{}, freeSeen: map[ShardID]time.Time{}, changed: make(chan struct{})}
}

// loop follows the replica and the session, syncing the leases.
func (m *shardMgr) loop() {
	for {
		v := m.c.fsm.View()
		s, sessChanged := m.c.currentSession()
		m.sync(v, s)
		select {
		case <-m.c.ctx.Done():
			return
		case <-v.Changed():
		case <-sessChanged:
		}
	}
}

// sync brings the leases in line with v: it ends leases the replica no
// longer shows, starts the handoff of revoked ones, and creates leases for
// shards newly granted to s. Views older than one already synced are
// ignored, so a lease is never recreated from stale state.
func (m *shardMgr) sync(v *fsm.View, s *session.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || v.Index() < m.synced {
		return
	}
	m.synced = v.Index()
	for id, l := range m.leases {
		if v.Index() < l.index {
			continue
		}
		cur, _ := v.Shard(uint32(id))
		switch {
		case cur.State == fsm.ShardFree || cur.Owner != l.sess.ID() || cur.Token != l.token:
			l.end(ErrLeaseLost)
		case cur.State == fsm.ShardRevoking:
			m.revokeLocked(l)
		}
	}
	sid := ""
	if s != nil {
		sid = s.ID()
	}
	if v.ShardsIndex() == m.scanned && sid == m.scanSess {
		return
	}
	m.scanned, m.scanSess = v.ShardsIndex(), sid
	now := time.Now()
	v.EachShard(func(sh fsm.Shard) bool {
		id := ShardID(sh.ID)
		if sh.State == fsm.ShardFree {
			if _, ok := m.freeSeen[id]; !ok {
				m.freeSeen[id] = now
			}
			return true
		}
		if s == nil || sh.Owner != s.ID() {
			delete(m.freeSeen, id)
			return true
		}
		if l, ok := m.leases[id]; ok && l.token == sh.Token {
			return true
		}
		if sh.Token <= m.ended[id] || m.releases[id] == sh.Token {
			return true
		}
		if sh.State == fsm.ShardRevoking {
			// Revoked before this node ever believed it: release at once.
			m.releaseLocked(s, id, sh.Token)
			return true
		}
		m.startLocked(s, id, sh.Token, v.Index())
		return true
	})
}

// startLocked creates the lease of a shard granted to s and runs the
// handler's Acquire.
func (m *shardMgr) startLocked(s *session.Session, id ShardID, token, index uint64) {
	l := &ShardLease{belief: newBelief(m.c, kindShard, s, token, index), shard: id,
		revoked: make(chan struct{}), hookDone: make(chan struct{})}
	wait := time.Duration(0)
	if t, ok := m.freeSeen[id]; ok {
		wait = l.life.Start().Sub(t)
		delete(m.freeSeen, id)
	}
	m.c.metrics.acquireWait.WithLabelValues(kindShard).Observe(wait.Seconds())
	m.leases[id] = l
	m.notifyLocked()
	context.AfterFunc(l.Context(), func() { m.forget(l) })
	h := m.c.cfg.Handler
	if !m.c.spawn(func() {
		defer close(l.hookDone)
		if h != nil {
			h.Acquire(l.Context(), l)
		}
	}) {
		close(l.hookDone)
		l.end(ErrShutdown)
	}
}

// end ends the lease with cause (at now).
func (l *ShardLease) end(cause error) bool {
	return l.belief.end(cause, time.Time{}, nil)
}

// forget drops an ended lease and remembers its token so it is never
// believed again.
func (m *shardMgr) forget(l *ShardLease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended[l.shard] < l.token {
		m.ended[l.shard] = l.token
	}
	if m.leases[l.shard] == l {
		delete(m.leases, l.shard)
		m.notifyLocked()
	}
}

func (m *shardMgr) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// revokeLocked freezes a revoked lease's belief (keepalives no longer
// extend it) and starts its handoff.
func (m *shardMgr) revokeLocked(l *ShardLease) {
	select {
	case <-l.revoked:
		return
	default:
	}
	close(l.revoked)
	l.capAt(func(at time.Time) { l.belief.end(ErrLeaseLost, at, nil) })
	m.releases[l.shard] = l.token
	m.c.spawn(func() { m.handoff(l) })
}

// handoff drains a revoked shard through the handler, ends the lease and
// commits the release.
func (m *shardMgr) handoff(l *ShardLease) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(l.Context(), m.c.cfg.ShardDrainTimeout)
	if h := m.c.cfg.Handler; h != nil {
		if err := h.Release(ctx, l); err != nil {
			m.c.log.Warn("shard release hook failed", "shard", l.shard, "token", l.token, "error", err)
		}
	}
	cancel()
	l.end(ErrRevoked)
	wait := time.NewTimer(max(m.c.cfg.ShardDrainTimeout-time.Since(start), time.Millisecond))
	select {
	case <-l.hookDone:
	case <-wait.C:
		m.c.log.Warn("shard acquire hook still running after the lease ended", "shard", l.shard)
	}
	wait.Stop()
	m.commitRelease(l.sess, l.shard, l.token)
}

// releaseLocked commits the release of a shard this node never believed.
func (m *shardMgr) releaseLocked(s *session.Session, id ShardID, token uint64) {
	m.releases[id] = token
	m.c.spawn(func() { m.commitRelease(s, id, token) })
}

// commitRelease commits the release of (id, token) by s, retrying while
// the outcome is unknown; the session's end makes it moot.
func (m *shardMgr) commitRelease(s *session.Session, id ShardID, token uint64) {
	defer func() {
		m.mu.Lock()
		if m.releases[id] == token {
			delete(m.releases, id)
		}
		if m.ended[id] < token {
			m.ended[id] = token
		}
		m.mu.Unlock()
	}()
	_, err := m.c.applyRetry(s.Context(), fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{
		Items: []fsm.ShardItem{{Shard: uint32(id), Session: s.ID(), Token: token}},
	}})
	if err != nil && !errors.Is(err, ErrNoSession) && s.Context().Err() == nil {
		m.c.log.Warn("committing a shard release failed; the leader forces it after a TTL",
			"shard", id, "token", token, "error", err)
	}
}

// owned returns the live leases, sorted by shard.
func (m *shardMgr) owned() []*ShardLease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*ShardLease, 0, len(m.leases))
	for _, l := range m.leases {
		if l.Context().Err() == nil {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].shard < out[j].shard })
	return out
}

// count returns the number of live leases.
func (m *shardMgr) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.leases {
		if l.Context().Err() == nil {
			n++
		}
	}
	return n
}

// state returns the number of live leases and releases under way, and a
// channel closed when the leases change.
func (m *shardMgr) state() (leases, releasing int, changed <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.leases), len(m.releases), m.changed
}

// close ends every lease with cause and stops creating new ones.
func (m *shardMgr) close(cause error) {
	m.mu.Lock()
	m.closed = true
	all := make([]*ShardLease, 0, len(m.leases))
	for _, l := range m.leases {
		all = append(all, l)
	}
	m.mu.Unlock()
	for _, l := range all {
		l.end(cause)
	}
}
