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

func applySessionCreate(st state, index uint64, c *SessionCmd, changed *[]uint32) (state, Result, error) {
	if err := validName("session ID", c.ID); err != nil {
		return st, Result{}, err
	}
	if c.TTLNanos <= 0 || len(c.Node) > MaxNameLength || len(c.NodeID) > MaxNameLength ||
		len(c.Addr) > MaxNameLength || !validWeight(c.Weight) {
		return st, Result{}, fmt.Errorf("%w: session needs a positive TTL, short names and a finite weight >= 0", ErrMalformed)
	}
	if err := checkTags("session "+c.ID, c.Tags, false); err != nil {
		return st, Result{}, err
	}
	if _, ok := st.Sessions[c.ID]; ok {
		return st, Result{Noop: true}, nil
	}
	if staleCreate(st, c) {
		return st, Result{Stale: true}, nil // an older incarnation of the node: changes nothing
	}
	st.Sessions = cloneMap(st.Sessions)
	st.Sessions[c.ID] = &Session{ID: c.ID, Node: c.Node, NodeID: c.NodeID, TTLNanos: c.TTLNanos, Created: index,
		Addr: c.Addr, Weight: c.Weight, Drained: c.Drain, Gen: c.Gen, Tags: slices.Clone(c.Tags), Level: c.Level}
	return supersede(st, index, c, changed), Result{}, nil
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
	return endSessionSems(st, index, c.ID), Result{}, nil
}
