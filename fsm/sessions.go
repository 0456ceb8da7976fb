package fsm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Errors carried in Result.Err by session and lease commands.
var (
	// ErrNoSession: the command names a session that does not exist (it
	// expired, was closed, or never existed).
	ErrNoSession = errors.New("fsm: no such session")
	// ErrLeaseHeld: a non-waiting acquire found the lease held by another
	// session.
	ErrLeaseHeld = errors.New("fsm: lease held by another session")
)

// sortedKeys returns m's keys in order, so that apply never depends on map
// iteration order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func validName(what, s string) error {
	if s == "" || len(s) > MaxNameLength {
		return fmt.Errorf("%w: %s must have 1 to %d bytes", ErrMalformed, what, MaxNameLength)
	}
	return nil
}

func applySessionCreate(st state, index uint64, c *SessionCmd) (state, Result, error) {
	if err := validName("session ID", c.ID); err != nil {
		return st, Result{}, err
	}
	if c.TTLNanos <= 0 || len(c.Node) > MaxNameLength || len(c.NodeID) > MaxNameLength ||
		len(c.Addr) > MaxNameLength || !validWeight(c.Weight) {
		return st, Result{}, fmt.Errorf("%w: session needs a positive TTL, short names and a finite weight >= 0", ErrMalformed)
	}
	if _, ok := st.Sessions[c.ID]; ok {
		return st, Result{Noop: true}, nil
	}
	st.Sessions = cloneMap(st.Sessions)
	st.Sessions[c.ID] = &Session{ID: c.ID, Node: c.Node, NodeID: c.NodeID, TTLNanos: c.TTLNanos, Created: index,
		Addr: c.Addr, Weight: c.Weight, Drained: c.Drain}
	return st, Result{}, nil
}

// applySessionEnd closes or expires a session: every lease it holds goes to
// the next waiter (or is deleted) and it leaves every queue. An expiry that
// names another incarnation (Created mismatch) is a no-op.
func applySessionEnd(st state, index uint64, c *SessionCmd, expire bool, changed *[]uint32) (state, Result, error) {
	s, ok := st.Sessions[c.ID]
	if !ok || (expire && c.Created != 0 && c.Created != s.Created) {
		return st, Result{Noop: true}, nil
	}
	st.Sessions = cloneMap(st.Sessions)
	delete(st.Sessions, c.ID)
	st = freeSessionShards(st, index, c.ID, changed)
	touched := false
	for _, name := range sortedKeys(st.Leases) {
		l := st.Leases[name]
		if l.Holder != c.ID && !slices.ContainsFunc(l.Waiters, func(w Waiter) bool { return w.Session == c.ID }) {
			continue
		}
		if !touched {
			st.Leases = cloneMap(st.Leases)
			touched = true
		}
		nl := *l
		nl.Waiters = removeWaiter(l.Waiters, c.ID)
		if l.Holder == c.ID {
			st = grantNext(st, index, &nl)
		} else {
			st.Leases[name] = &nl
		}
	}
	return st, Result{}, nil
}

func removeWaiter(ws []Waiter, session string) []Waiter {
	out := make([]Waiter, 0, len(ws))
	for _, w := range ws {
		if w.Session != session {
			out = append(out, w)
		}
	}
	return out
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
		st.Leases[l.Name] = l
		return st
	}
	delete(st.Leases, l.Name)
	return st
}

func applyAcquire(st state, index uint64, c *LeaseCmd) (state, Result, error) {
	if err := validName("lease name", c.Name); err != nil {
		return st, Result{}, err
	}
	sess, ok := st.Sessions[c.Session]
	if !ok {
		return st, Result{}, fmt.Errorf("%w: %s", ErrNoSession, c.Session)
	}
	l, held := st.Leases[c.Name]
	switch {
	case !held:
		st.Leases = cloneMap(st.Leases)
		st.LastToken++
		st.Leases[c.Name] = &Lease{Name: c.Name, Holder: c.Session, HolderNode: sess.Node, HolderNodeID: sess.NodeID,
			Token: st.LastToken, Request: c.Request, Granted: index}
		return st, Result{Token: st.LastToken, Holder: c.Session, Request: c.Request}, nil
	case l.Holder == c.Session:
		return st, Result{Token: l.Token, Holder: l.Holder, Request: l.Request, Noop: true}, nil
	case slices.ContainsFunc(l.Waiters, func(w Waiter) bool { return w.Session == c.Session }):
		return st, Result{Token: l.Token, Holder: l.Holder, Queued: true, Noop: true}, nil
	case !c.Wait:
		return st, Result{Token: l.Token, Holder: l.Holder}, fmt.Errorf("%w: %s holds %s", ErrLeaseHeld, l.Holder, c.Name)
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Waiters = append(slices.Clip(l.Waiters), Waiter{Session: c.Session, Request: c.Request})
	st.Leases[c.Name] = &nl
	return st, Result{Token: l.Token, Holder: l.Holder, Queued: true}, nil
}

// applyRelease releases the lease when the session holds it (with the
// given token, if any), or takes the session out of its queue.
func applyRelease(st state, index uint64, c *LeaseCmd) (state, Result, error) {
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
	if !slices.ContainsFunc(l.Waiters, func(w Waiter) bool { return w.Session == c.Session }) {
		return st, Result{Noop: true}, nil
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Waiters = removeWaiter(l.Waiters, c.Session)
	st.Leases[c.Name] = &nl
	return st, Result{}, nil
}
