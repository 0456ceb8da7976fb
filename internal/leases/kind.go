package leases

import (
	"fmt"

	"github.com/holdfast-go/holdfast/fsm"
)

// Kind is what a grant is: a named lease or a permit of a named
// semaphore. Everything the two do differently is a method of Kind.
type Kind uint8

const (
	// Lease is a named lease: one holder at a time, and one local
	// contender per name.
	Lease Kind = iota + 1
	// Semaphore is one of the permits of a named semaphore; a node may hold
	// several permits of one semaphore (one per acquire).
	Semaphore
)

// String returns the kind's "kind" label in the lease metrics: "leader"
// for a named lease (the label value predates the word "lease" for it and
// is kept, as dashboards select on it), "semaphore" for a permit.
func (k Kind) String() string {
	if k == Semaphore {
		return "semaphore"
	}
	return "leader"
}

// Request is one acquire.
type Request struct {
	Kind Kind
	Name string
	// Limit is the semaphore's number of permits (semaphores only).
	Limit int
	// Wait queues the request when nothing is free; otherwise a busy name
	// refuses it at once.
	Wait bool
	// Value is the grant's holder value (leases only; see Grant.SetValue).
	Value string
}

// validate checks the request's name and limit.
func (r Request) validate() error {
	if r.Name == "" || len(r.Name) > fsm.MaxNameLength {
		return fmt.Errorf("holdfast: %s name must have 1 to %d bytes", r.Kind.noun(), fsm.MaxNameLength)
	}
	if r.Kind == Semaphore && (r.Limit < 1 || r.Limit > fsm.MaxSemLimit) {
		return fmt.Errorf("holdfast: semaphore limit must be 1 to %d", fsm.MaxSemLimit)
	}
	if r.Kind == Semaphore && r.Value != "" {
		return fmt.Errorf("holdfast: a semaphore permit carries no holder value")
	}
	return nil
}

// noun names the kind in error messages.
func (k Kind) noun() string {
	if k == Semaphore {
		return "semaphore"
	}
	return "lease"
}

// op is a step whose settlement is counted: an acquire or a release.
type op uint8

const (
	opAcquire op = iota
	opRelease
)

// label is the "op" label of the settlement metric ("resign" is a lease's
// release: the label value is kept, as dashboards select on it).
func (k Kind) label(o op) string {
	switch {
	case k == Semaphore && o == opAcquire:
		return "sem-acquire"
	case k == Semaphore:
		return "sem-release"
	case o == opAcquire:
		return "acquire"
	}
	return "resign"
}

// acquireCmd is request req of session sess for r.
func (k Kind) acquireCmd(r Request, sess string, req uint64) fsm.Command {
	if k == Semaphore {
		return fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: r.Name, Session: sess, Request: req,
			Limit: uint32(r.Limit), Wait: r.Wait}}
	}
	return fsm.Command{Op: fsm.OpAcquire, Lease: &fsm.LeaseCmd{Name: r.Name, Session: sess, Request: req, Wait: r.Wait, Value: r.Value}}
}

// ReleaseCmd is the release of request req of session sess for name (token:
// only that grant, or 0 for whatever grant the request holds): it releases
// the grant that answered the request, takes the request out of the queue,
// or marks it given up.
func (k Kind) ReleaseCmd(name, sess string, req, token uint64) fsm.Command {
	if k == Semaphore {
		return fsm.Command{Op: fsm.OpSemRelease, Sem: &fsm.SemCmd{Name: name, Session: sess, Request: req, Token: token}}
	}
	return fsm.Command{Op: fsm.OpRelease, Lease: &fsm.LeaseCmd{Name: name, Session: sess, Request: req, Token: token}}
}

// grantedNow reports whether an acquire's answer is a grant to session sess
// (rather than a queue entry).
func (k Kind) grantedNow(res Result, sess string) bool {
	if k == Semaphore {
		return !res.Queued
	}
	return !res.Queued && res.Holder == sess
}

// granted returns the token of the grant that answered request req of
// session sess for name in v, if v shows one.
func (k Kind) granted(v *fsm.View, name, sess string, req uint64) (uint64, bool) {
	if k == Semaphore {
		return v.SemPermit(name, sess, req)
	}
	holder, token, r, ok := v.Grant(name)
	if !ok || holder != sess || r != req {
		return 0, false
	}
	return token, true
}
