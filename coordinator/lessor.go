package coordinator

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// lessor is the leader's side of sessions (DESIGN.md §4 rules 1–3). It
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
	deadlines map[string]time.Time // session → deadline
	expiring  map[string]bool      // expiry decided: keepalives are refused

	verifyReq chan chan error // batched VerifyLeader requests
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
	l.mu.Lock()
	l.active = true
	l.epoch++
	l.deadlines = map[string]time.Time{}
	l.expiring = map[string]bool{}
	for _, s := range v.Sessions() {
		l.deadlines[s.ID] = now.Add(time.Duration(s.TTLNanos) + l.c.cfg.ExpiryGrace)
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.active = false
		l.epoch++
		l.deadlines, l.expiring = nil, nil
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
// VerifyLeader that started after its arrival confirms this node still
// leads, and then the deadline becomes arrival + TTL.
func (l *lessor) keepAlive(ctx context.Context, id string) error {
	arrived := time.Now()
	epoch, err := l.check(id)
	if err != nil {
		return err
	}
	if err := l.verify(ctx); err != nil {
		addr, _ := l.c.leaderRPCAddr()
		return &NotLeaderError{Leader: addr}
	}
	s, ok := l.c.fsm.View().Session(id)
	if !ok {
		return ErrNoSession
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.epoch != epoch {
		return &NotLeaderError{}
	}
	if l.expiring[id] {
		return ErrNoSession
	}
	if d := arrived.Add(time.Duration(s.TTLNanos)); d.After(l.deadlines[id]) {
		l.deadlines[id] = d
	}
	return nil
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

// verify waits for a VerifyLeader that started after the call.
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

// verifyLoop batches VerifyLeader: every request queued when a round starts
// is answered by that round, so a burst of keepalives costs one round of
// heartbeats.
func (l *lessor) verifyLoop() {
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
		err := l.c.raft.VerifyLeader().Error()
		for _, ch := range batch {
			ch <- err
		}
	}
}
