package fsm

import (
	"fmt"
	"unicode/utf8"
)

// A holder value is a small string a lease's holder attaches to its grant,
// for the readers of the holder: where the holder serves, which version it
// runs (etcd's election value and Proclaim, Consul's lock value). An
// acquire may carry one (LeaseCmd.Value); a waiter keeps its value in the
// queue and the grant takes it. OpLeaseValue changes it for the current
// grant, keeping the grant's token: it applies only while the grant its
// request names holds the lease (else it is stale), and only when its
// ValueSeq is above the grant's last one (else it is a late or repeated
// copy). A new grant starts with its acquire's value and sequence 0.

// ValueCommandVersion is the version byte written in front of the
// commands that carry a holder value: an OpAcquire with a LeaseCmd.Value,
// and every OpLeaseValue. Their body is msgpack, as under CommandVersion.
// A release before it would decode such an acquire under version 1,
// ignore the value and show the holder without it; under this version it
// refuses the command instead (ErrUnknownVersion). Decode reads no other
// operation under it, and an OpAcquire under version 1 only without a
// value.
const ValueCommandVersion = 4

// MaxValueLength bounds a holder value, in bytes.
const MaxValueLength = 1024

// CheckValue returns an error wrapping ErrMalformed when v is not a valid
// holder value: more than MaxValueLength bytes, or not UTF-8.
func CheckValue(v string) error {
	switch {
	case len(v) > MaxValueLength:
		return fmt.Errorf("%w: holder value of %d bytes, at most %d", ErrMalformed, len(v), MaxValueLength)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: holder value is not valid UTF-8", ErrMalformed)
	}
	return nil
}

// carriesValue reports whether c is written under ValueCommandVersion.
func (c Command) carriesValue() bool {
	return c.Op == OpLeaseValue || (c.Op == OpAcquire && c.Lease != nil && c.Lease.Value != "")
}

// decodeValued decodes the body of a command written under
// ValueCommandVersion: an OpAcquire with a value, or an OpLeaseValue.
func decodeValued(c Command, body []byte) (Command, error) {
	if c.Op != OpAcquire && c.Op != OpLeaseValue {
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, ValueCommandVersion)
	}
	c.Lease = new(LeaseCmd)
	if err := decodeBody(body, c.Lease); err != nil {
		return Command{}, err
	}
	if !c.carriesValue() {
		return Command{}, fmt.Errorf("%w: acquire without a value under version %d", ErrMalformed, ValueCommandVersion)
	}
	if err := c.Lease.checkNotHandover(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// applyLeaseValue sets the value of the grant that request c.Request of
// session c.Session holds (and, if c.Token is set, of that token's
// grant): stale when that grant is gone, a no-op when c.ValueSeq is not
// above the grant's last update.
func applyLeaseValue(st state, c *LeaseCmd) (state, Result, error) {
	if err := validName("lease name", c.Name); err != nil {
		return st, Result{}, err
	}
	if err := CheckValue(c.Value); err != nil {
		return st, Result{}, err
	}
	l, ok := st.Leases[c.Name]
	if !ok || l.Holder != c.Session || l.Request != c.Request || (c.Token != 0 && c.Token != l.Token) {
		return st, Result{Noop: true, Stale: true}, nil
	}
	res := Result{Token: l.Token, Holder: l.Holder, Request: l.Request}
	if c.ValueSeq <= l.ValueSeq {
		res.Noop = true
		return st, res, nil
	}
	st.Leases = cloneMap(st.Leases)
	nl := *l
	nl.Value, nl.ValueSeq = c.Value, c.ValueSeq
	st.Leases[c.Name] = &nl
	return st, res, nil
}

// leasesCarryValues reports whether a lease or one of its waiters has a
// holder value (the snapshot is then written under SnapshotValueVersion).
func leasesCarryValues(ls []Lease) bool {
	for _, l := range ls {
		if l.Value != "" {
			return true
		}
		for _, w := range l.Waiters {
			if w.Value != "" {
				return true
			}
		}
	}
	return false
}

// checkLeaseValues checks the holder values of a restored lease and its
// waiters.
func checkLeaseValues(l *Lease) error {
	if err := CheckValue(l.Value); err != nil {
		return err
	}
	for _, w := range l.Waiters {
		if err := CheckValue(w.Value); err != nil {
			return err
		}
	}
	return nil
}
