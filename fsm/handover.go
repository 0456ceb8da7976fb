package fsm

import "fmt"

// A handover is one node passing a lease name from one of its callers to
// the next: OpLeaseHandover releases the grant (or queue entry) of request
// LeaseCmd.Prev of the session, exactly as an OpRelease of that request
// and token would, and then asks for the lease under request
// LeaseCmd.Request, exactly as an OpAcquire would, in one log entry. Its
// result is the acquire's. Nothing is granted out of turn: when other
// sessions wait, the release grants the lease to the first of them and
// the acquire queues behind the last. The two halves are applied in one
// step, so no replica ever shows the state between them; the release
// half is what a lone release would have been, so a caller that
// released with it sees its release committed when the handover is.

// CommandLevel is the command level of this release, which its nodes'
// session creates carry (SessionCmd.Level): the newest commands its
// replicas read. Level 1 reads OpLeaseHandover. A node proposes a command
// of a level only while every live session was created at or above it
// (View.SessionsAtLevel): in a rolling upgrade, while a node of an older
// release is still up, nobody hands over, so no replica is sent a
// command it would refuse.
const CommandLevel = 1

// HandoverLevel is the command level at which OpLeaseHandover is read.
const HandoverLevel = 1

// SessionsAtLevel reports whether every live session of the view was
// created by a release at or above command level (see CommandLevel).
func (v *View) SessionsAtLevel(level uint32) bool {
	v.levelOnce.Do(func() {
		v.minLevel = CommandLevel
		for _, s := range v.st.Sessions {
			v.minLevel = min(v.minLevel, s.Level)
		}
	})
	return v.minLevel >= level
}

// HandoverCommandVersion is the version byte in front of an
// OpLeaseHandover; the body is msgpack, as under CommandVersion. A release
// before it reads no such command (ErrUnknownVersion): a mixed cluster
// must finish upgrading before its nodes hand leases over.
const HandoverCommandVersion = 7

// decodeHandover decodes the body of a command written under
// HandoverCommandVersion: only an OpLeaseHandover, whose request follows
// the request it releases.
func decodeHandover(c Command, body []byte) (Command, error) {
	if c.Op != OpLeaseHandover {
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, HandoverCommandVersion)
	}
	c.Lease = new(LeaseCmd)
	if err := decodeBody(body, c.Lease); err != nil {
		return Command{}, err
	}
	if err := c.Lease.checkHandover(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// checkHandover reports whether l is a valid handover: a released request
// (Prev) and a later request that asks.
func (l *LeaseCmd) checkHandover() error {
	if l.Prev == 0 || l.Request <= l.Prev {
		return fmt.Errorf("%w: a handover releases request %d and asks under %d: it needs 0 < released < asking", ErrMalformed, l.Prev, l.Request)
	}
	return nil
}

// applyHandover releases request c.Prev (token c.PrevToken, 0: whatever
// it holds) and then asks under c.Request. Bad input changes nothing: the
// name, the value and the session are checked before either half.
func applyHandover(st state, index uint64, c *LeaseCmd) (state, Result, error) {
	if err := c.checkHandover(); err != nil {
		return st, Result{}, err
	}
	if err := validName("lease name", c.Name); err != nil {
		return st, Result{}, err
	}
	if err := CheckValue(c.Value); err != nil {
		return st, Result{}, err
	}
	if _, ok := st.Sessions[c.Session]; !ok {
		return st, Result{}, fmt.Errorf("%w: %s", ErrNoSession, c.Session)
	}
	rel := LeaseCmd{Name: c.Name, Session: c.Session, Request: c.Prev, Token: c.PrevToken}
	st, _, err := applyRelease(st, index, &rel)
	if err != nil {
		return st, Result{}, err // not reached: a release with a request refuses nothing
	}
	acq := *c
	acq.Prev, acq.PrevToken = 0, 0
	return applyAcquire(st, index, &acq)
}

// checkNotHandover refuses the handover's fields in any other command.
func (l *LeaseCmd) checkNotHandover() error {
	if l.Prev != 0 || l.PrevToken != 0 {
		return fmt.Errorf("%w: a released request only in a handover (version %d)", ErrMalformed, HandoverCommandVersion)
	}
	return nil
}

// checkOp reports whether l is a valid body for op, as far as the
// handover's fields go.
func (l *LeaseCmd) checkOp(op Op) error {
	if op == OpLeaseHandover {
		return l.checkHandover()
	}
	return l.checkNotHandover()
}
