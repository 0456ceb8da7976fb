package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// Lease commands act on requests. Every acquire carries its request ID,
// unique and increasing within its session; the grant or queue entry it
// makes remembers it, and a release or leave names the request it gives
// up. A command acts only on what its own request created:
//
//   - An acquire whose request already holds or waits is answered again
//     (a retry of a committed request mints nothing new).
//   - Every acquire and every request-carrying release raises the
//     session's request mark for its name (Session.Marks). An acquire at or
//     below the mark that neither holds nor waits is stale (a late or
//     duplicated copy, or one whose sender already gave it up): it changes
//     nothing and says so (Result.Stale).
//   - A newer acquire of a session that waits under an older request takes
//     over that queue entry, keeping its place: the older request's caller
//     has given up (one node asks for one name at a time).
//   - A release with a request ID releases the grant only while that
//     request holds it (and the token matches, if given), or takes that
//     request out of the queue; anything else is a no-op.
//
// A release without a request ID can only come from a log written by an
// older release; it keeps its old meaning (the session's grant if the token
// matches or is 0, else the session's queue entry).

// removeWaiter returns ws without session's entries.
func removeWaiter(ws []Waiter, session string) []Waiter {
	out := make([]Waiter, 0, len(ws))
	for _, w := range ws {
		if w.Session != session {
			out = append(out, w)
		}
	}
	return out
}

// waiterOf returns the index of session's queue entry in ws, or -1.
func waiterOf(ws []Waiter, session string) int {
	return slices.IndexFunc(ws, func(w Waiter) bool { return w.Session == session })
}

// grantNext gives l (whose holder is gone) to its first waiter with a new
// token, or deletes it when nobody waits. st.Leases must already be a
// private copy.
func grantNext(st state, index uint64, l *Lease) state {
	for len(l.Waiters) > 0 {
		w := l.Waiters[0]
		l.Waiters = l.Waiters[1:]
		if _, ok := st.Sessions[w.Session]; !ok {
			continue
		}
		st.LastToken++
		sess := st.Sessions[w.Session]
		l.Holder, l.Token, l.Request, l.Granted = w.Session, st.LastToken, w.Request, index
		l.HolderNode, l.HolderNodeID = sess.Node, sess.NodeID
		l.Value, l.ValueSeq = w.Value, 0
		st.Leases[l.Name] = l
		return st
	}
	delete(st.Leases, l.Name)
	return st
}

// marksSorted reports whether ms is strictly sorted by name (as
// markRequest keeps it; a snapshot that is not was not written by Snapshot).
func marksSorted(ms []RequestMark) bool {
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Name >= ms[i].Name {
			return false
		}
	}
	return true
}

// markRequest raises the session's request mark for name to req. It
// returns st unchanged when the mark is already there.
func markRequest(st state, sess *Session, name string, req uint64) state {
	i, found := slices.BinarySearchFunc(sess.Marks, name, func(m RequestMark, n string) int { return strings.Compare(m.Name, n) })
	if found && req <= sess.Marks[i].Request {
		return st
	}
	st.Sessions = cloneMap(st.Sessions)
	ns := *sess
	if found {
		ns.Marks = slices.Clone(sess.Marks)
		ns.Marks[i].Request = req
	} else {
		ns.Marks = slices.Insert(slices.Clip(sess.Marks), i, RequestMark{Name: name, Request: req})
	}
	st.Sessions[ns.ID] = &ns
	return st
}

func applyAcquire(st state, index uint64, c *LeaseCmd) (state, Result, error) {
	if err := validName("lease name", c.Name); err != nil {
		return st, Result{}, err
	}
	if err := CheckValue(c.Value); err != nil {
		return st, Result{}, err
	}
	sess, ok := st.Sessions[c.Session]
	if !ok {
		return st, Result{}, fmt.Errorf("%w: %s", ErrNoSession, c.Session)
	}
	l, held := st.Leases[c.Name]
	w := -1
	if held {
		w = waiterOf(l.Waiters, c.Session)
		switch {
		case l.Holder == c.Session && l.Request == c.Request:
			return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Noop: true}, nil
		case w >= 0 && l.Waiters[w].Request == c.Request:
			return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Queued: true, Noop: true}, nil
		}
	}
	if c.Request != 0 && c.Request <= sess.mark(c.Name) {
		res := Result{Noop: true, Stale: true}
		if held {
			res.Token, res.Holder, res.Request = l.Token, l.Holder, l.Request
		}
		return st, res, nil
	}
	st = markRequest(st, sess, c.Name, c.Request)
	switch {
	case !held:
		st.Leases = cloneMap(st.Leases)
		st.LastToken++
		st.Leases[c.Name] = &Lease{Name: c.Name, Holder: c.Session, HolderNode: sess.Node, HolderNodeID: sess.NodeID,
			Token: st.LastToken, Request: c.Request, Granted: index, Value: c.Value}
		return st, Result{Token: st.LastToken, Holder: c.Session, Request: c.Request}, nil
	case l.Holder == c.Session:
		// An older request of this session holds the lease: the caller
		// releases that grant and asks again.
		return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request}, nil
	case w >= 0:
		// The session waits under an older request whose caller gave up:
		// this request takes its place.
		st.Leases = cloneMap(st.Leases)
		nl := *l
		nl.Waiters = slices.Clone(l.Waiters)
		nl.Waiters[w].Request, nl.Waiters[w].Value = c.Request, c.Value
		st.Leases[c.Name] = &nl
		return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Queued: true}, nil
	case !c.Wait:
		// Refused; the state keeps only the raised mark, so that a late
		// copy of this request cannot take the lease after the refusal.
		err := fmt.Errorf("%w: %s holds %s", ErrLeaseHeld, l.Holder, c.Name)
		return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Err: err}, nil
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Waiters = append(slices.Clip(l.Waiters), Waiter{Session: c.Session, Request: c.Request, Value: c.Value})
	st.Leases[c.Name] = &nl
	return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Queued: true}, nil
}

// applyRelease gives up a request: it releases the grant that answered
// it, or takes it out of the queue (see the rules above). A release
// without a request ID keeps the meaning older releases gave it.
func applyRelease(st state, index uint64, c *LeaseCmd) (state, Result, error) {
	if c.Request == 0 {
		return applyLegacyRelease(st, index, c)
	}
	sess, ok := st.Sessions[c.Session]
	if !ok {
		return st, Result{Noop: true}, nil // the session is gone, and all it had
	}
	st = markRequest(st, sess, c.Name, c.Request)
	l, ok := st.Leases[c.Name]
	if !ok {
		return st, Result{Noop: true}, nil
	}
	if l.Holder == c.Session && (releaseUnchecked || l.Request == c.Request && (c.Token == 0 || c.Token == l.Token)) {
		st.Leases = cloneMap(st.Leases)
		nl := *l
		st = grantNext(st, index, &nl)
		return st, Result{}, nil
	}
	w := waiterOf(l.Waiters, c.Session)
	if w < 0 || l.Waiters[w].Request != c.Request {
		return st, Result{Noop: true}, nil
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Waiters = slices.Delete(slices.Clone(l.Waiters), w, w+1)
	st.Leases[c.Name] = &nl
	return st, Result{}, nil
}

// applyLegacyRelease is a release written by an older release (no request
// ID): the session's grant when the token matches (or is 0), else the
// session's queue entry.
func applyLegacyRelease(st state, index uint64, c *LeaseCmd) (state, Result, error) {
	l, ok := st.Leases[c.Name]
	if !ok {
		return st, Result{Noop: true}, nil
	}
	if l.Holder == c.Session && (c.Token == 0 || c.Token == l.Token) {
		st.Leases = cloneMap(st.Leases)
		nl := *l
		st = grantNext(st, index, &nl)
		return st, Result{}, nil
	}
	if waiterOf(l.Waiters, c.Session) < 0 {
		return st, Result{Noop: true}, nil
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Waiters = removeWaiter(l.Waiters, c.Session)
	st.Leases[c.Name] = &nl
	return st, Result{}, nil
}
