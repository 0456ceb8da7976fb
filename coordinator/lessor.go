package coordinator

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// lessor is the leader's side of sessions (lease rules 1–3 in docs/ARCHITECTURE.md). It
// keeps every session's deadline in memory on the leader's monotonic clock;
// keepalives extend deadlines without touching the raft log; a passed
// deadline is turned into a committed Expire command. It is active only
// while this node leads, from the moment the leader's Barrier has applied
// every earlier entry.
type lessor struct {
	c *Coordinator

	mu        sync.Mutex
	active    bool
	epoch     uint64               // bumped on every activation and deactivation
	term      uint64               // the raft term this node leads in, while active
	deadlines map[string]time.Time // session → deadline
	expiring  map[string]bool      // expiry decided: keepalives are refused
	heard     map[string]time.Time // node ID → its last answered keepalive or stats poll

	verifyReq chan chan error // batched VerifyLeader requests

	// Test hooks (nil in production): onActivate sees the instant the
	// lessor took over; onKeepAlive sees each answered keepalive's arrival.
	onActivate  func(at time.Time)
	onKeepAlive func(session string, arrived time.Time)
}

func newLessor(c *Coordinator) *lessor {
	return &lessor{c: c, verifyReq: make(chan chan error, 64)}
}

// run is the lessor's duty while this node leads: it activates, extends
// every session by TTL + grace (rule 3), follows sessions appearing and
// disappearing in the replica, and expires the ones whose deadline passed.
func (l *lessor) run(ctx context.Context) {
	now := time.Now()
	v := l.c.fsm.View()
	term := l.c.raft.CurrentTerm()
	l.mu.Lock()
	l.active = true
	l.epoch++
	l.term = term
	l.deadlines = map[string]time.Time{}
	l.expiring = map[string]bool{}
	l.heard = map[string]time.Time{}
	sessions := v.Sessions()
	for _, s := range sessions {
		l.deadlines[s.ID] = now.Add(time.Duration(s.TTLNanos) + l.c.cfg.ExpiryGrace)
	}
	hook := l.onActivate
	l.mu.Unlock()
	l.c.log.Info("lessor active: every session's deadline set to now + TTL + ExpiryGrace",
		"sessions", len(sessions), "expiry_grace", l.c.cfg.ExpiryGrace)
	if hook != nil {
		hook(now)
	}
	defer func() {
		l.mu.Lock()
		l.active = false
		l.epoch++
		l.deadlines, l.expiring, l.heard = nil, nil, nil
		l.mu.Unlock()
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.sync(v)
		l.expireDue(ctx)
		timer.Reset(l.nextDeadline())
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
			v = l.c.fsm.View()
		case <-timer.C:
		}
	}
}

// sync adds sessions new in v (deadline now + TTL) and forgets gone ones.
func (l *lessor) sync(v *fsm.View) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range v.Sessions() {
		if _, ok := l.deadlines[s.ID]; !ok {
			l.deadlines[s.ID] = now.Add(time.Duration(s.TTLNanos))
		}
	}
	for id := range l.deadlines {
		if _, ok := v.Session(id); !ok {
			delete(l.deadlines, id)
			delete(l.expiring, id)
		}
	}
}

// nextDeadline is how long until the earliest deadline; a session whose
// expiry did not commit yet is retried after a short pause.
func (l *lessor) nextDeadline() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := time.Hour
	for id, d := range l.deadlines {
		if l.expiring[id] {
			next = min(next, 100*time.Millisecond)
		} else {
			next = min(next, time.Until(d))
		}
	}
	return max(next, time.Millisecond)
}

// expireDue commits an expiry for every session whose deadline passed. From
// the moment one is chosen its keepalives are refused, so a keepalive can
// never be answered for a session whose expiry is under way.
func (l *lessor) expireDue(ctx context.Context) {
	now := time.Now()
	l.mu.Lock()
	var due []string
	for id, d := range l.deadlines {
		if !now.Before(d) {
			l.expiring[id] = true
			due = append(due, id)
		}
	}
	l.mu.Unlock()
	sort.Strings(due)
	for _, id := range due {
		s, ok := l.c.fsm.View().Session(id)
		if !ok {
			continue
		}
		l.c.log.Info("expiring session", "session", id, "node", s.Node)
		cmd := fsm.Command{Op: fsm.OpSessionExpire, Session: &fsm.SessionCmd{ID: id, Created: s.Created}}
		if _, err := l.c.applyLocal(ctx, mustEncode(cmd)); err != nil {
			// Still refused: a later leader extends it (rule 3) or expires it.
			l.c.log.Warn("expiring session failed", "session", id, "error", err)
			return
		}
		if l.c.metrics != nil {
			l.c.metrics.expiries.Inc()
		}
	}
}

// keepAlive answers one keepalive that arrived now: only after a
// leadership confirmation that started after its arrival (confirmLoop), and
// then the deadline becomes arrival + TTL. It returns the applied index of
// the leader's replica at the answer: every revoke committed before the
// answer is at or below it.
func (l *lessor) keepAlive(ctx context.Context, id string) (uint64, error) {
	arrived := time.Now()
	epoch, err := l.check(id)
	if err != nil {
		return 0, err
	}
	if err := l.verify(ctx); err != nil {
		addr, _ := l.c.leaderRPCAddr()
		return 0, &NotLeaderError{Leader: addr}
	}
	v := l.c.fsm.View()
	s, ok := v.Session(id)
	if !ok {
		return 0, ErrNoSession
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.epoch != epoch {
		return 0, &NotLeaderError{}
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
	if l.onKeepAlive != nil {
		l.onKeepAlive(id, arrived)
	}
	return v.Index(), nil
}

// expiringOrDue reports whether the session's expiry is decided or its
// deadline passed: the balancer gives it no shard.
func (l *lessor) expiringOrDue(id string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.deadlines[id]
	return l.expiring[id] || (ok && !now.Before(d))
}

// deadline returns the lessor's deadline for a session, if it tracks it.
func (l *lessor) deadline(id string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.deadlines[id]
	return d, ok
}

// heardWithin reports whether, while this node leads, a keepalive from the
// node with the given raft ID arrived within the last d and was answered:
// the node reaches the leader over RPC whatever gossip says of it.
func (l *lessor) heardWithin(nodeID string, d time.Duration, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.heard[nodeID]
	return ok && now.Sub(t) < d
}

// noteHeard records, while this node leads, that the node with the given
// raft ID reached it over RPC at t (autopilot's stats poll answered).
func (l *lessor) noteHeard(nodeID string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heard != nil && t.After(l.heard[nodeID]) {
		l.heard[nodeID] = t
	}
}

// check says whether a keepalive for id can be served now.
func (l *lessor) check(id string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		addr, self := l.c.leaderRPCAddr()
		if self {
			addr = ""
		}
		return 0, &NotLeaderError{Leader: addr}
	}
	if _, ok := l.c.fsm.View().Session(id); !ok || l.expiring[id] {
		return 0, ErrNoSession
	}
	return l.epoch, nil
}

// verify waits for a leadership confirmation round that started after the
// call (see confirmLoop).
func (l *lessor) verify(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case l.verifyReq <- ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// confirmLoop batches leadership confirmations: every request queued when
// a round starts is answered by that round, so a burst of keepalives costs
// one round.
//
// Why not raft's VerifyLeader: hashicorp/raft counts a heartbeat response
// that arrives after VerifyLeader was called even when the heartbeat was
// sent before, so a leader that was frozen (SIGSTOP, a long GC pause) can
// resume, receive a keepalive, and have it "verified" by acknowledgements
// its followers sent before they elected a new leader, however long ago.
// Its answer would then let the holder believe past the new leader's
// deadline, and no grace period bounds that. A round here sends a fresh
// request to every voter after the keepalives it answers arrived; a voter
// says yes only if its current raft term is still this leader's term. A
// quorum of yes, this node included, proves that no newer leader had been
// elected when they answered (a newer leader needs a quorum of voters that
// moved to a later term, and quorums intersect).
func (l *lessor) confirmLoop() {
	for {
		var batch []chan error
		select {
		case <-l.c.ctx.Done():
			return
		case ch := <-l.verifyReq:
			batch = append(batch, ch)
		}
	drain:
		for {
			select {
			case ch := <-l.verifyReq:
				batch = append(batch, ch)
			default:
				break drain
			}
		}
		err := l.confirmRound()
		for _, ch := range batch {
			ch <- err
		}
	}
}

type (
	confirmRequest = wire.ConfirmRequest
	confirmReply   = wire.ConfirmReply
)

// confirmRound asks every voter whether it is still in this leader's term.
func (l *lessor) confirmRound() error {
	c := l.c
	l.mu.Lock()
	term, active := l.term, l.active
	l.mu.Unlock()
	if !active || c.raft.State() != raft.Leader || c.raft.CurrentTerm() != term {
		return ErrNotLeader
	}
	var voters []raft.Server
	for _, s := range c.raftServers() {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
		}
	}
	need := len(voters)/2 + 1
	yes := make(chan bool, len(voters))
	ctx, cancel := context.WithTimeout(c.ctx, min(c.cfg.RPCTimeout, c.cfg.SessionTTL/3))
	defer cancel()
	for _, s := range voters {
		if string(s.ID) == c.id {
			yes <- true
			continue
		}
		addr, _, err := transport.SplitRaftAddress(s.Address)
		if err != nil {
			yes <- false
			continue
		}
		go func() {
			var rep confirmReply
			err := c.trans.Call(ctx, addr, methodConfirm, confirmRequest{Term: term}, &rep)
			yes <- err == nil && rep.OK
		}()
	}
	got, answered := 0, 0
	for answered < len(voters) && got < need {
		if <-yes {
			got++
		}
		answered++
	}
	if got < need {
		return ErrNotLeader
	}
	return nil
}

// serveConfirm answers a leader's confirmation request: yes while this
// node's current raft term is the leader's.
func (c *Coordinator) serveConfirm(req confirmRequest) confirmReply {
	return confirmReply{OK: c.raft.CurrentTerm() == req.Term}
}
