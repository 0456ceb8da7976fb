package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Semaphore commands follow the lease request rules (leases.go), with N
// holders instead of one:
//
//   - The first acquire of a free name fixes its limit; an acquire with
//     another limit while the semaphore exists is refused (ErrSemLimit)
//     and changes nothing but its request mark. A semaphore with no holders and no waiters does
//     not exist in the state, so its limit is free again.
//   - Holders and waiters are keyed by (session, request): a session may
//     hold several permits of one name, one per request.
//   - An acquire whose request already holds or waits is answered again;
//     one at or below the session's semaphore request mark for the name
//     (Session.SemMarks) that neither holds nor waits is stale and changes
//     nothing (Result.Stale).
//   - A grant takes the next value of the one token counter, so tokens
//     strictly increase per name (and across names, leases and shards).
//   - Waiters are served first come first: a new acquire is granted only
//     when fewer than Limit hold and nobody waits.
//   - A release names its request: it frees that request's permit (if the
//     token matches, when given) or takes it out of the queue, and grants
//     freed slots to the first waiters. Anything else is a no-op.
//   - A session's end frees its permits and queue entries in the same
//     command and grants the freed slots.

// MaxSemLimit bounds a semaphore's limit.
const MaxSemLimit = 1 << 16

// Errors carried in Result.Err by semaphore commands.
var (
	// ErrSemLimit: an acquire's limit differs from the semaphore's.
	ErrSemLimit = errors.New("fsm: semaphore limit differs from the one it was created with")
	// ErrSemFull: a non-waiting acquire found every permit held (or others
	// waiting).
	ErrSemFull = errors.New("fsm: semaphore has no free permit")
)

// SemCmd is the body of OpSemAcquire and OpSemRelease.
type SemCmd struct {
	// Name is the semaphore's name.
	Name string `msgpack:"name"`
	// Session is the requesting session.
	Session string `msgpack:"session"`
	// Request identifies the request within the session (increasing,
	// never 0). On release it names the request given up.
	Request uint64 `msgpack:"req"`
	// Limit, on acquire, is the number of permits the caller expects.
	Limit uint32 `msgpack:"limit,omitempty"`
	// Wait, on acquire, queues the request when no permit is free.
	Wait bool `msgpack:"wait,omitempty"`
	// Token, on release, is the permit's token (0: whatever permit the
	// request holds; a mismatch makes the release a no-op).
	Token uint64 `msgpack:"token,omitempty"`
}

// SemHolder is one permit of a semaphore.
type SemHolder struct {
	Session string `msgpack:"session"`
	Node    string `msgpack:"node"`
	NodeID  string `msgpack:"nid"`
	Request uint64 `msgpack:"req"`
	// Token is the permit's fencing token.
	Token uint64 `msgpack:"token"`
	// Granted is the raft index of the grant.
	Granted uint64 `msgpack:"granted"`
}

// Semaphore is a named semaphore: at most Limit holders, each with its own
// token, and a queue of waiters. Holders are in grant (token) order.
type Semaphore struct {
	Name    string      `msgpack:"name"`
	Limit   uint32      `msgpack:"limit"`
	Holders []SemHolder `msgpack:"holders"`
	Waiters []Waiter    `msgpack:"waiters"`
}

func (s *Semaphore) holderOf(session string, req uint64) int {
	return slices.IndexFunc(s.Holders, func(h SemHolder) bool { return h.Session == session && h.Request == req })
}

func (s *Semaphore) waiterOf(session string, req uint64) int {
	return slices.IndexFunc(s.Waiters, func(w Waiter) bool { return w.Session == session && w.Request == req })
}

// semMark returns the session's semaphore request mark for name.
func (s *Session) semMark(name string) uint64 {
	i, ok := slices.BinarySearchFunc(s.SemMarks, name, func(m RequestMark, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return 0
	}
	return s.SemMarks[i].Request
}

// markSemRequest raises the session's semaphore mark for name to req.
func markSemRequest(st state, sess *Session, name string, req uint64) state {
	i, found := slices.BinarySearchFunc(sess.SemMarks, name, func(m RequestMark, n string) int { return strings.Compare(m.Name, n) })
	if found && req <= sess.SemMarks[i].Request {
		return st
	}
	st.Sessions = cloneMap(st.Sessions)
	ns := *sess
	if found {
		ns.SemMarks = slices.Clone(sess.SemMarks)
		ns.SemMarks[i].Request = req
	} else {
		ns.SemMarks = slices.Insert(slices.Clip(sess.SemMarks), i, RequestMark{Name: name, Request: req})
	}
	st.Sessions[ns.ID] = &ns
	return st
}

// fillSem grants s's free slots to its first waiters (skipping sessions
// that are gone) and stores it, or deletes it when it is empty. s must be
// a private copy with private slices; st.Semaphores must be a private copy.
func fillSem(st state, index uint64, s *Semaphore) state {
	for len(s.Holders) < int(s.Limit) && len(s.Waiters) > 0 {
		w := s.Waiters[0]
		s.Waiters = s.Waiters[1:]
		sess, ok := st.Sessions[w.Session]
		if !ok {
			continue
		}
		st.LastToken++
		s.Holders = append(s.Holders, SemHolder{Session: w.Session, Node: sess.Node, NodeID: sess.NodeID,
			Request: w.Request, Token: st.LastToken, Granted: index})
	}
	if len(s.Holders) == 0 && len(s.Waiters) == 0 {
		delete(st.Semaphores, s.Name)
		return st
	}
	st.Semaphores[s.Name] = s
	return st
}

func semResult(s *Semaphore) Result {
	if s == nil {
		return Result{}
	}
	return Result{Count: len(s.Holders)}
}

func applySemAcquire(st state, index uint64, c *SemCmd) (state, Result, error) {
	if err := validName("semaphore name", c.Name); err != nil {
		return st, Result{}, err
	}
	if c.Request == 0 || c.Limit == 0 || c.Limit > MaxSemLimit {
		return st, Result{}, fmt.Errorf("%w: semaphore acquire needs a request ID and a limit of 1 to %d", ErrMalformed, MaxSemLimit)
	}
	sess, ok := st.Sessions[c.Session]
	if !ok {
		return st, Result{}, fmt.Errorf("%w: %s", ErrNoSession, c.Session)
	}
	s := st.Semaphores[c.Name]
	if s != nil {
		if i := s.holderOf(c.Session, c.Request); i >= 0 {
			res := semResult(s)
			res.Token, res.Holder, res.Request, res.Noop = s.Holders[i].Token, c.Session, c.Request, true
			return st, res, nil
		}
		if s.waiterOf(c.Session, c.Request) >= 0 {
			res := semResult(s)
			res.Queued, res.Noop = true, true
			return st, res, nil
		}
	}
	if c.Request <= sess.semMark(c.Name) {
		res := semResult(s)
		res.Noop, res.Stale = true, true
		return st, res, nil
	}
	st = markSemRequest(st, sess, c.Name, c.Request)
	if s != nil && s.Limit != c.Limit {
		// Refused; the raised mark keeps a late copy of this request from
		// taking a permit once the semaphore is free again.
		err := fmt.Errorf("%w: %s has limit %d, not %d", ErrSemLimit, c.Name, s.Limit, c.Limit)
		return st, Result{Err: err, Count: len(s.Holders)}, nil
	}
	ns := &Semaphore{Name: c.Name, Limit: c.Limit}
	if s != nil {
		ns.Holders, ns.Waiters = slices.Clone(s.Holders), slices.Clone(s.Waiters)
	}
	if len(ns.Holders) < int(ns.Limit) && len(ns.Waiters) == 0 {
		st.Semaphores = cloneMap(st.Semaphores)
		st.LastToken++
		ns.Holders = append(ns.Holders, SemHolder{Session: c.Session, Node: sess.Node, NodeID: sess.NodeID,
			Request: c.Request, Token: st.LastToken, Granted: index})
		st.Semaphores[c.Name] = ns
		return st, Result{Token: st.LastToken, Holder: c.Session, Request: c.Request, Count: len(ns.Holders)}, nil
	}
	if !c.Wait {
		// Refused; only the raised mark stays, so that a late copy of this
		// request cannot take a permit after the refusal.
		err := fmt.Errorf("%w: %d of %d permits of %s held", ErrSemFull, len(ns.Holders), ns.Limit, c.Name)
		return st, Result{Err: err, Count: len(ns.Holders)}, nil
	}
	st.Semaphores = cloneMap(st.Semaphores)
	ns.Waiters = append(ns.Waiters, Waiter{Session: c.Session, Request: c.Request})
	st.Semaphores[c.Name] = ns
	return st, Result{Queued: true, Count: len(ns.Holders)}, nil
}

// applySemRelease gives up a request: it frees the permit that answered
// it, or takes it out of the queue, and grants freed slots.
func applySemRelease(st state, index uint64, c *SemCmd) (state, Result, error) {
	if err := validName("semaphore name", c.Name); err != nil {
		return st, Result{}, err
	}
	if c.Request == 0 {
		return st, Result{}, fmt.Errorf("%w: semaphore release needs a request ID", ErrMalformed)
	}
	sess, ok := st.Sessions[c.Session]
	if !ok {
		return st, Result{Noop: true}, nil // the session is gone, and all it had
	}
	st = markSemRequest(st, sess, c.Name, c.Request)
	s, ok := st.Semaphores[c.Name]
	if !ok {
		return st, Result{Noop: true}, nil
	}
	h := s.holderOf(c.Session, c.Request)
	w := s.waiterOf(c.Session, c.Request)
	switch {
	case h >= 0 && (c.Token == 0 || c.Token == s.Holders[h].Token):
	case w >= 0:
	default:
		return st, Result{Noop: true}, nil
	}
	ns := &Semaphore{Name: s.Name, Limit: s.Limit, Holders: slices.Clone(s.Holders), Waiters: slices.Clone(s.Waiters)}
	if h >= 0 && (c.Token == 0 || c.Token == s.Holders[h].Token) {
		ns.Holders = slices.Delete(ns.Holders, h, h+1)
	} else {
		ns.Waiters = slices.Delete(ns.Waiters, w, w+1)
	}
	st.Semaphores = cloneMap(st.Semaphores)
	st = fillSem(st, index, ns)
	return st, semResult(ns), nil
}

// endSessionSems frees every permit and queue entry of the ended session id
// (already removed from st.Sessions) and grants the freed slots.
func endSessionSems(st state, index uint64, id string) state {
	touched := false
	for _, name := range sortedKeys(st.Semaphores) {
		s := st.Semaphores[name]
		mine := func(session string) bool { return session == id }
		if !slices.ContainsFunc(s.Holders, func(h SemHolder) bool { return mine(h.Session) }) &&
			!slices.ContainsFunc(s.Waiters, func(w Waiter) bool { return mine(w.Session) }) {
			continue
		}
		if !touched {
			st.Semaphores = cloneMap(st.Semaphores)
			touched = true
		}
		ns := &Semaphore{Name: s.Name, Limit: s.Limit,
			Holders: slices.DeleteFunc(slices.Clone(s.Holders), func(h SemHolder) bool { return mine(h.Session) }),
			Waiters: removeWaiter(s.Waiters, id)}
		st = fillSem(st, index, ns)
	}
	return st
}

// semsFromWire rebuilds the semaphores of a snapshot, rejecting what
// Snapshot could not have written.
func semsFromWire(st *state, ws []Semaphore) error {
	st.Semaphores = make(map[string]*Semaphore, len(ws))
	for i := range ws {
		s := &ws[i]
		if _, dup := st.Semaphores[s.Name]; dup {
			return fmt.Errorf("%w: semaphore %q twice in snapshot", ErrMalformed, s.Name)
		}
		bad := s.Limit == 0 || s.Limit > MaxSemLimit || len(s.Holders) > int(s.Limit) ||
			(len(s.Holders) == 0 && len(s.Waiters) == 0) || (len(s.Waiters) > 0 && len(s.Holders) < int(s.Limit))
		for _, h := range s.Holders {
			if _, ok := st.Sessions[h.Session]; !ok || h.Token > st.LastToken {
				bad = true
			}
		}
		if bad {
			return fmt.Errorf("%w: semaphore %q is inconsistent", ErrMalformed, s.Name)
		}
		st.Semaphores[s.Name] = s
	}
	return nil
}

// Semaphore returns a copy of the named semaphore; ok is false when nobody
// holds or waits for it.
func (v *View) Semaphore(name string) (Semaphore, bool) {
	s, ok := v.st.Semaphores[name]
	if !ok {
		return Semaphore{}, false
	}
	return Semaphore{Name: s.Name, Limit: s.Limit, Holders: slices.Clone(s.Holders), Waiters: slices.Clone(s.Waiters)}, true
}

// Semaphores returns every semaphore, sorted by name.
func (v *View) Semaphores() []Semaphore {
	out := make([]Semaphore, 0, len(v.st.Semaphores))
	for _, name := range sortedKeys(v.st.Semaphores) {
		s, _ := v.Semaphore(name)
		out = append(out, s)
	}
	return out
}

// SemPermit reports whether request req of session holds a permit of the
// named semaphore, and its token, without allocating.
func (v *View) SemPermit(name, session string, req uint64) (token uint64, ok bool) {
	s, found := v.st.Semaphores[name]
	if !found {
		return 0, false
	}
	if i := s.holderOf(session, req); i >= 0 {
		return s.Holders[i].Token, true
	}
	return 0, false
}
