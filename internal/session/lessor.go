package session

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// LessorOptions are what a Lessor needs from the raft node it runs on.
type LessorOptions struct {
	// Log receives the lessor's logs (nil: discarded).
	Log *slog.Logger
	// Now is the leader's clock for session deadlines (nil: time.Now).
	Now func() time.Time
	// View returns the local replica's current view; its Changed channel
	// wakes the lessor.
	View func() *fsm.View
	// Expire commits cmd (a session expiry) through raft on this node,
	// which leads.
	Expire func(ctx context.Context, cmd fsm.Command) error
	// Term returns this node's current raft term.
	Term func() uint64
	// Leading reports whether raft says this node is the leader.
	Leading func() bool
	// Voters returns the voters of the raft configuration.
	Voters func() []Voter
	// Self is this node's raft server ID.
	Self string
	// Confirm asks voter v (at its address, by its raft server ID) whether
	// its current raft term is term (the leader's side of a confirmation
	// round); a node at that address with another identity says no.
	Confirm func(ctx context.Context, v Voter, term uint64) (bool, error)
	// ConfirmTimeout bounds one confirmation round, and each question of
	// it (a question still unanswered when the round has its quorum goes on
	// in the background until then).
	ConfirmTimeout time.Duration
	// ConfirmSpacing is the least time from one confirmation round's start
	// to the next one a keepalive starts: keepalives that arrive sooner wait
	// for it and share one round, so the rounds keepalives cost a leader
	// stay at most 1/ConfirmSpacing per second however many nodes keep
	// alive. A keepalive after a quiet spell starts its round at once, and
	// a ConfirmedCommit (Sync, a read index) never waits: it starts the
	// next round at once, and the keepalives waiting ride along. Zero:
	// rounds run back to back.
	ConfirmSpacing time.Duration
	// ExpiryGrace is added to every session's TTL when the lessor becomes
	// active, on top of the TTL.
	ExpiryGrace time.Duration
	// NotLeader returns the error for a request this node cannot serve as
	// leader (naming the leader, if one is known).
	NotLeader func() error
	// Metrics count each session expiry this lessor committed (nil: not
	// counted).
	Metrics *Metrics
	// StallThreshold is the longest gap between two passes of Run's loop
	// that is not a stall (0: 1s). A longer gap (the process frozen or
	// starved, a pass held up by a slow commit) extends every deadline by
	// the gap, to at least one threshold from the end of the stall, before
	// any expiry is decided; Run wakes at least every half of it.
	StallThreshold time.Duration
	// Loads receives the shard loads carried by every keepalive this
	// lessor answered over the wire (nil: dropped).
	Loads func(session string, shards []uint32, loads []float32)
}

// Voter is one voter of the raft configuration, as a confirmation round
// needs it.
type Voter struct {
	// ID is the voter's raft server ID.
	ID string
	// Addr is the voter's RPC address ("" if it could not be parsed: the
	// voter then counts as a no).
	Addr string
}

// Lessor is the leader's side of sessions (lease rules 1–3 in
// docs/ARCHITECTURE.md). It keeps every session's deadline in memory on the
// leader's clock; keepalives extend deadlines without touching the raft
// log; a passed deadline is turned into a committed expiry. It is active
// only while Run runs, which the caller starts when this node leads and
// the leader's barrier has applied every earlier entry.
type Lessor struct {
	o   LessorOptions
	log *slog.Logger
	now func() time.Time

	mu         sync.Mutex
	active     bool
	epoch      uint64               // bumped on every activation and deactivation
	term       uint64               // the raft term this node leads in, while active
	deadlines  map[string]time.Time // session → deadline
	expiring   map[string]bool      // expiry decided: keepalives are refused
	heard      map[string]time.Time // node ID → its last answered keepalive or stats poll
	pending    map[string]int       // session → keepalives in flight: its expiry waits for them
	answered   map[string]bool      // sessions with a keepalive answered in this activation
	firstHeard chan struct{}        // closed and replaced when a session's first keepalive is answered
	lastBeat   time.Time            // the start of Run's latest pass (or the activation)
	stalls     int                  // stalls detected (observe), and their total length
	stalled    time.Duration

	verifyReq chan chan error // batched confirmation requests
	spacedReq chan chan error // keepalives' requests, spaced by ConfirmSpacing
	asking    sync.Mutex      // guards askingVoter
	// askingVoter lists the voters a question of an earlier round is still
	// waiting for; a round does not ask them again (they count as no).
	askingVoter map[string]bool
	questions   sync.WaitGroup // questions in flight; ConfirmLoop joins them

	// Test hooks (nil in production): onActivate sees the instant the
	// lessor took over; onKeepAlive sees each answered keepalive's arrival.
	onActivate  func(at time.Time)
	onKeepAlive func(session string, arrived time.Time)
	pause       func() // see SetPauseHook
}

// NewLessor returns an inactive lessor. Its confirmation loop
// (ConfirmLoop) must run for KeepAlive and ConfirmedCommit to answer.
func NewLessor(o LessorOptions) *Lessor {
	l := &Lessor{o: o, log: o.Log, now: o.Now, verifyReq: make(chan chan error, 64), spacedReq: make(chan chan error, 64), askingVoter: map[string]bool{},
		firstHeard: make(chan struct{})}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// SetTestHooks installs hooks for tests: onActivate sees the instant the
// lessor takes over, onKeepAlive each answered keepalive's arrival (either
// may be nil).
func (l *Lessor) SetTestHooks(onActivate func(at time.Time), onKeepAlive func(session string, arrived time.Time)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onActivate, l.onKeepAlive = onActivate, onKeepAlive
}

// Run is the lessor's duty while this node leads: it activates, extends
// every session by TTL + ExpiryGrace (rule 3), follows sessions appearing
// and disappearing in the replica, and expires the ones whose deadline
// passed, until ctx ends; then it deactivates and returns. It wakes at
// least every StallThreshold/2, and each pass first extends every deadline
// if the gap since the previous pass shows a stall (see observe).
func (l *Lessor) Run(ctx context.Context) {
	v := l.o.View()
	l.Activate(v)
	defer l.Deactivate()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.held()
		l.pass(ctx, v)
		timer.Reset(min(l.nextDeadline(), l.beatEvery()))
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
			v = l.o.View()
		case <-timer.C:
		}
	}
}

// Activate makes the lessor serve keepalives in the current raft term,
// every session in v given a deadline of now + its TTL + ExpiryGrace (so
// no holder's belief from an earlier leader outlives it). Run calls it;
// a caller driving the lessor itself calls it and Deactivate.
func (l *Lessor) Activate(v *fsm.View) {
	now := l.now()
	term := l.o.Term()
	l.mu.Lock()
	l.active = true
	l.epoch++
	l.term = term
	l.deadlines = map[string]time.Time{}
	l.expiring = map[string]bool{}
	l.heard = map[string]time.Time{}
	l.pending = map[string]int{}
	l.answered = map[string]bool{}
	l.lastBeat = now
	sessions := v.Sessions()
	for _, s := range sessions {
		l.deadlines[s.ID] = now.Add(time.Duration(s.TTLNanos) + l.o.ExpiryGrace)
	}
	hook := l.onActivate
	l.mu.Unlock()
	l.log.Info("lessor active: every session's deadline set to now + TTL + Session.ExpiryGrace",
		"sessions", len(sessions), "expiry_grace", l.o.ExpiryGrace)
	if hook != nil {
		hook(now)
	}
}

// Deactivate stops the lessor serving: keepalives are refused and every
// deadline is forgotten.
func (l *Lessor) Deactivate() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = false
	l.epoch++
	l.deadlines, l.expiring, l.heard, l.pending, l.answered = nil, nil, nil, nil, nil
}

// pass is one turn of Run's loop on one reading of the clock: the stall
// check, then the replica's sessions, then the expiries due. Every step
// takes the same now: with a second reading, a pause of the process (or a
// jump of the clock) between the stall check and the expiries would expire
// sessions whose deadlines the check never got to extend, the very failure
// the check is there to prevent. The pause shows as a gap at the next pass.
func (l *Lessor) pass(ctx context.Context, v *fsm.View) {
	now := l.now()
	l.observe(now) // before any expiry is decided
	l.sync(v, now)
	l.expireDue(ctx, now)
}

// sync adds sessions new in v (deadline now + TTL) and forgets gone ones.
func (l *Lessor) sync(v *fsm.View, now time.Time) {
	sessions := v.Sessions() // outside the lock keepalives take
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sessions {
		if _, ok := l.deadlines[s.ID]; !ok {
			l.deadlines[s.ID] = now.Add(time.Duration(s.TTLNanos))
		}
	}
	for id := range l.deadlines {
		if _, ok := v.Session(id); !ok {
			delete(l.deadlines, id)
			delete(l.expiring, id)
			delete(l.answered, id)
		}
	}
}

// nextDeadline is how long until the earliest deadline; a session whose
// expiry did not commit yet, or that is due while a keepalive for it is in
// flight, is looked at again after a short pause.
func (l *Lessor) nextDeadline() time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	next := time.Hour
	for id, d := range l.deadlines {
		if l.expiring[id] || (l.pending[id] > 0 && !now.Before(d)) {
			next = min(next, 100*time.Millisecond)
		} else {
			next = min(next, d.Sub(now))
		}
	}
	return max(next, time.Millisecond)
}

// expireDue commits an expiry for every session whose deadline passed at
// now and for which no keepalive is in flight (one that arrived and waits
// for its confirmation round may extend it: the expiry is decided once it
// is answered or refused). From the moment one is chosen its keepalives are
// refused, so a keepalive can never be answered for a session whose expiry
// is under way.
func (l *Lessor) expireDue(ctx context.Context, now time.Time) {
	l.mu.Lock()
	var due []string
	for id, d := range l.deadlines {
		if !now.Before(d) && l.pending[id] == 0 {
			l.expiring[id] = true
			due = append(due, id)
		}
	}
	l.mu.Unlock()
	sort.Strings(due)
	for _, id := range due {
		s, ok := l.o.View().Session(id)
		if !ok {
			continue
		}
		l.log.Info("expiring session", "session", id, "session_node", s.Node) // "node" is this node's own key
		cmd := fsm.Command{Op: fsm.OpSessionExpire, Session: &fsm.SessionCmd{ID: id, Created: s.Created}}
		if err := l.o.Expire(ctx, cmd); err != nil {
			// Still refused: a later leader extends it (rule 3) or expires it.
			l.log.Warn("expiring session failed", "session", id, "error", err)
			return
		}
		l.o.Metrics.expired()
	}
}

// KeepAlive answers one keepalive for session id that arrived now: only
// after a confirmation round that started after its arrival (ConfirmLoop),
// and then the deadline becomes arrival + TTL. It returns the applied
// index of the leader's replica at the answer: every revoke committed
// before the answer is at or below it. It fails with ErrNoSession for a
// session the replica does not have or whose expiry is decided, and with
// NotLeader's error when this node cannot answer as leader.
func (l *Lessor) KeepAlive(ctx context.Context, id string) (uint64, error) {
	l.held()
	arrived := l.now()
	epoch, err := l.check(id)
	if err != nil {
		return 0, err
	}
	defer l.done(id, epoch)
	if err := l.verifyOn(ctx, l.spacedReq); err != nil {
		return 0, l.o.NotLeader()
	}
	v := l.o.View()
	s, ok := v.Session(id)
	if !ok {
		return 0, ErrNoSession
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.epoch != epoch {
		return 0, l.o.NotLeader()
	}
	if l.expiring[id] {
		return 0, ErrNoSession
	}
	if d := arrived.Add(time.Duration(s.TTLNanos)); d.After(l.deadlines[id]) {
		l.deadlines[id] = d
	}
	if s.NodeID != "" && arrived.After(l.heard[s.NodeID]) {
		l.heard[s.NodeID] = arrived
	}
	if !l.answered[id] {
		l.answered[id] = true
		close(l.firstHeard)
		l.firstHeard = make(chan struct{})
	}
	if l.onKeepAlive != nil {
		l.onKeepAlive(id, arrived)
	}
	return v.Index(), nil
}

// check says whether a keepalive for id can be served now, and in which
// activation; one that can is in flight until done.
func (l *Lessor) check(id string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return 0, l.o.NotLeader()
	}
	if _, ok := l.o.View().Session(id); !ok || l.expiring[id] {
		return 0, ErrNoSession
	}
	l.pending[id]++
	return l.epoch, nil
}

// done ends a keepalive's flight that check started in epoch.
func (l *Lessor) done(id string, epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch != epoch {
		return
	}
	if l.pending[id]--; l.pending[id] <= 0 {
		delete(l.pending, id)
	}
}

// ExpiringOrDue reports whether the session's expiry is decided or its
// deadline passed at now: the balancer gives it no shard.
func (l *Lessor) ExpiringOrDue(id string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.deadlines[id]
	return l.expiring[id] || (ok && !now.Before(d))
}

// Deadline returns the lessor's deadline for a session, if it tracks it.
func (l *Lessor) Deadline(id string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.deadlines[id]
	return d, ok
}
