package shards

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// Lease is this node's ownership of one shard, as the Manager tracks it:
// the grant's token and its belief under the session it was granted to.
// The belief ends when the shard is handed off, when the replica shows
// another owner or the shard free, with the session, or at Close.
type Lease struct {
	shard    ShardID
	token    uint64
	index    uint64 // raft index at which the grant was seen
	life     session.Belief
	revoked  signal // fires when the leader's revoke is seen
	hookDone signal // fires when the Serve callback returned
}

// Shard returns the shard the lease owns.
func (l *Lease) Shard() ShardID { return l.shard }

// Token returns the fencing token of the grant.
func (l *Lease) Token() uint64 { return l.token }

// Index returns the raft index at which this node saw the grant.
func (l *Lease) Index() uint64 { return l.index }

// Belief returns the lease's belief: its context, its end and its cap.
func (l *Lease) Belief() *session.Belief { return &l.life }

// Revoked returns a channel closed once the leader has asked this node to
// hand the shard off; the lease holds until the handoff ends it.
func (l *Lease) Revoked() <-chan struct{} { return l.revoked.wait() }

func (l *Lease) sessionID() string { return l.life.Session().ID() }

// held is a live lease and the caller's value for it, in one allocation
// with the lease's belief.
type held[W any] struct {
	Lease
	w W
}

// Manager is the owner side of shard ownership on every node: it turns the
// replica's shard table into leases for this node's session, runs the
// Serve callback for each, hands a shard off (HandOff callback, then the
// release's commit) when the leader revokes it, and drains the node on
// request. W is the caller's value for a lease (the coordinator's
// ShardLease), made once per lease by Options.Wrap. The Manager owns its
// goroutines: Start starts them, Close joins them.
type Manager[W any] struct {
	o       Options[W]
	stop    chan struct{} // closed by Close
	wg      sync.WaitGroup
	drained atomic.Bool // sessions start drained (Drain was called, not Undrain)

	mu     sync.Mutex
	closed bool
	// Per shard, indexed by shard ID: a few bytes a shard whoever owns
	// it, where maps keyed by shard cost more per owned shard and never
	// shrink after a node that owned most shards hands them off.
	leases   []*held[W]                       // the lease of each shard (nil: none)
	nLeases  int                              // non-nil entries of leases
	ended    []uint64                         // highest token this node stopped believing, per shard
	freeSeen []uint32                         // when this node first saw each shard free: freeStamp (0: not free)
	epoch    time.Time                        // the origin of freeSeen's times
	releases map[ShardID]uint64               // releases under way (token)
	synced   uint64                           // index of the newest view synced
	cursor   fsm.ShardCursor                  // the newest view synced, for its changes
	scanSess string                           // session of the newest view synced
	changes  []uint32                         // Sync's buffer of changed shards
	pending  []release                        // releases waiting for the releaser
	watches  map[*session.Session]func() bool // the sessions of leases, until they end (stop functions)
	flushing bool                             // the releaser is running
	changed  chan struct{}                    // closed and replaced when leases or releases change
	fired    chan struct{}                    // closed at once: the channel of signals that fired unwatched
	prepared map[ShardID]*ready               // shards this node prepares for moves to it (prepare_owner.go)
}

// NewManager returns a Manager; call Start to have it follow the replica.
func NewManager[W any](o Options[W]) *Manager[W] {
	m := &Manager[W]{o: o.withDefaults(), stop: make(chan struct{}), releases: map[ShardID]uint64{}, epoch: time.Now(),
		watches: map[*session.Session]func() bool{},
		changed: make(chan struct{}), fired: make(chan struct{})}
	close(m.fired)
	o.Metrics.bind(m.Count, o.View)
	return m
}

// Start follows the replica and the session in a goroutine Close joins,
// syncing the leases after every change.
func (m *Manager[W]) Start() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.loop()
	}()
}

func (m *Manager[W]) loop() {
	for {
		v := m.o.View()
		s, sessChanged := m.o.Session()
		m.Sync(v, s)
		select {
		case <-m.stop:
			return
		case <-m.o.Stop:
			return
		case <-v.Changed():
		case <-sessChanged:
		}
	}
}

// Sync brings the leases in line with v: it ends leases the replica no
// longer shows, starts the handoff of revoked ones, and creates leases for
// shards newly granted to s (nil: no valid session). Views older than one
// already synced are ignored, so a lease is never recreated from stale
// state. The session's keepalive calls it with the view of a keepalive
// answer before extending the session, so a revoke seen by then caps the
// lease first. While the session stays the same, Sync visits only the
// shards that changed since the last view it synced (fsm.View.ShardChanges);
// it reads the whole table after a session change, or when the replica
// cannot say what changed.
func (m *Manager[W]) Sync(v *fsm.View, s *session.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || v.Index() < m.synced {
		return
	}
	m.synced = v.Index()
	sid := ""
	if s != nil {
		sid = s.ID()
	}
	defer m.syncPreparedLocked(v, sid) // after the leases started: Acquire comes first
	now := time.Now()
	m.growLocked(v.ShardCount())
	if sid == m.scanSess {
		if ids, ok := v.ShardChanges(m.cursor, m.changes[:0]); ok {
			m.changes, m.cursor = ids, v.ShardCursor()
			for _, id := range ids {
				sh, _ := v.Shard(id)
				if h := m.leases[id]; h != nil {
					m.checkLocked(v, h, sh)
				}
				m.scanLocked(v, s, sh, now)
			}
			return
		}
	}
	m.cursor, m.scanSess = v.ShardCursor(), sid
	for id, h := range m.leases {
		if h != nil {
			sh, _ := v.Shard(uint32(id))
			m.checkLocked(v, h, sh)
		}
	}
	v.EachShard(func(sh fsm.Shard) bool {
		m.scanLocked(v, s, sh, now)
		return true
	})
}

// freeStamp is d, a time after the Manager's epoch, in the 4 bytes per
// shard freeSeen keeps (8 with a Duration: 0.4 MiB a node at 100,000
// shards, for a metric): milliseconds, wrapping every 49 days, never 0.
func freeStamp(d time.Duration) uint32 { return max(uint32(d/time.Millisecond), 1) }

// freeWait returns the time from stamp seen to stamp now (freeStamp), which
// wrapping subtraction gets right for waits under 24 days; a longer or
// negative one reads as 0.
func freeWait(seen, now uint32) time.Duration {
	d := now - seen
	if d >= 1<<31 {
		return 0
	}
	return time.Duration(d) * time.Millisecond
}

// growLocked sizes the per-shard slices for n shards.
func (m *Manager[W]) growLocked(n int) {
	if len(m.freeSeen) < n {
		m.freeSeen = append(m.freeSeen, make([]uint32, n-len(m.freeSeen))...)
		m.ended = append(m.ended, make([]uint64, n-len(m.ended))...)
		m.leases = append(m.leases, make([]*held[W], n-len(m.leases))...)
	}
}

// checkLocked ends lease h if cur (its shard's entry in v) shows it lost,
// and starts its handoff if cur shows it revoked.
func (m *Manager[W]) checkLocked(v *fsm.View, h *held[W], cur fsm.Shard) {
	if v.Index() < h.index {
		return
	}
	switch {
	case cur.State == fsm.ShardFree || cur.Owner != h.sessionID() || cur.Token != h.token:
		m.endLocked(h, m.o.Errors.Lost)
	case cur.State == fsm.ShardRevoking:
		m.revokeLocked(h)
	}
}

// scanLocked acts on one entry of the table for session s.
func (m *Manager[W]) scanLocked(v *fsm.View, s *session.Session, sh fsm.Shard, now time.Time) {
	id := ShardID(sh.ID)
	if sh.State == fsm.ShardFree {
		if m.freeSeen[id] == 0 {
			m.freeSeen[id] = freeStamp(now.Sub(m.epoch))
		}
		return
	}
	if s == nil || sh.Owner != s.ID() {
		m.freeSeen[id] = 0
		return
	}
	if l := m.leases[id]; l != nil && l.token == sh.Token {
		return
	}
	if sh.Token <= m.ended[id] || m.releases[id] == sh.Token {
		return
	}
	if sh.State == fsm.ShardRevoking {
		// Revoked before this node ever believed it: release at once.
		m.releaseLocked(s, id, sh.Token)
		return
	}
	m.startLocked(s, id, sh.Token, v.Index())
}

// startLocked creates the lease of a shard granted to s and runs the
// Serve callback, if there is one. Nothing is registered in the lease's
// context: the Manager ends the lease itself (and, when s ends, every lease
// of s), so it learns of every end without a watch per lease.
func (m *Manager[W]) startLocked(s *session.Session, id ShardID, token, index uint64) {
	h := &held[W]{Lease: Lease{shard: id, token: token, index: index}}
	h.life.Init(s)
	l := &h.Lease
	wait := time.Duration(0)
	if t := m.freeSeen[id]; t != 0 {
		wait = freeWait(t, freeStamp(l.life.Start().Sub(m.epoch)))
		m.freeSeen[id] = 0
	}
	m.o.Metrics.waited(wait)
	h.w = m.o.Wrap(l)
	if m.leases[id] == nil {
		m.nLeases++
	}
	m.leases[id] = h
	m.notifyLocked()
	m.watchLocked(s)
	if m.o.Serve == nil {
		l.hookDone.fire(&m.fired)
		return
	}
	m.goLocked(func() {
		defer l.hookDone.fire(&m.fired)
		m.o.Serve(l.life.Context(), h.w)
	})
}

// goLocked runs f in a goroutine Close joins; m.mu is held and m is not
// closed.
func (m *Manager[W]) goLocked(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

func (m *Manager[W]) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Owned returns the values of the live leases, sorted by shard.
func (m *Manager[W]) Owned() []W {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]W, 0, m.nLeases)
	for _, h := range m.leases {
		if h != nil && h.life.Context().Err() == nil {
			out = append(out, h.w)
		}
	}
	return out
}

// Count returns the number of live leases.
func (m *Manager[W]) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, h := range m.leases {
		if h != nil && h.life.Context().Err() == nil {
			n++
		}
	}
	return n
}

// state returns the number of leases and releases under way, and a channel
// closed when either changes.
func (m *Manager[W]) state() (leases, releasing int, changed <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nLeases, len(m.releases), m.changed
}
