package fsm

import "testing"

// leave is the command a node sends to give up request req: it releases
// the grant that answered req, or takes req out of the queue.
func leave(session, name string, req uint64) Command {
	return Command{Op: OpRelease, Lease: &LeaseCmd{Name: name, Session: session, Request: req}}
}

func newLeaseApplier(t *testing.T, sessions ...string) *applier {
	a := &applier{t: t, f: New()}
	for _, s := range sessions {
		if r := a.do(createSession(s)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return a
}

// TestLateLeaveDoesNotEndLaterGrant: a copy of a leave that arrives after
// the same session was granted the lease again (for a newer request) must
// not release that grant.
func TestLateLeaveDoesNotEndLaterGrant(t *testing.T) {
	a := newLeaseApplier(t, "a", "b")
	a.do(acquire("b", "x", 1, true))
	if r := a.do(acquire("a", "x", 5, true)); !r.Queued {
		t.Fatalf("a not queued: %+v", r)
	}
	a.do(leave("a", "x", 5)) // a gave up request 5
	if r := a.do(acquire("a", "x", 6, true)); !r.Queued {
		t.Fatalf("a not queued again: %+v", r)
	}
	a.do(release("b", "x", 1))
	holder, token, req, ok := a.f.View().Grant("x")
	if !ok || holder != "a" || req != 6 {
		t.Fatalf("after b's release: holder %q req %d ok %v, want a's request 6", holder, req, ok)
	}
	a.do(leave("a", "x", 5)) // a late copy of the first leave
	if h, tok, ok := a.f.View().Holder("x"); !ok || h != "a" || tok != token {
		t.Fatalf("a late leave of request 5 ended a's grant for request 6: holder %q token %d ok %v", h, tok, ok)
	}
}

// TestLateAcquireAfterLeaveCreatesNothing: an acquire delivered (again)
// after its sender left with that request must neither queue nor grant.
func TestLateAcquireAfterLeaveCreatesNothing(t *testing.T) {
	a := newLeaseApplier(t, "a", "b")
	a.do(acquire("b", "x", 1, true))
	a.do(acquire("a", "x", 5, true))
	a.do(leave("a", "x", 5))
	a.do(acquire("a", "x", 5, true)) // duplicated or delayed copy
	if l, _ := a.f.View().Lease("x"); len(l.Waiters) != 0 {
		t.Fatalf("a late acquire queued again: %+v", l.Waiters)
	}
	a.do(release("b", "x", 1))
	if h, _, ok := a.f.View().Holder("x"); ok {
		t.Fatalf("a late acquire left a grant to %q nobody asked for", h)
	}
	// The leave may also overtake its acquire: the acquire then comes too late.
	a.do(leave("a", "y", 7))
	a.do(acquire("a", "y", 7, false))
	if h, _, ok := a.f.View().Holder("y"); ok {
		t.Fatalf("an acquire that arrived after its leave granted the lease to %q", h)
	}
}

// TestNewerAcquireSupersedesOrphanedQueueEntry: when a session queued for
// request 5 asks again for request 6 (the caller of 5 gave up), the grant
// must answer request 6.
func TestNewerAcquireSupersedesOrphanedQueueEntry(t *testing.T) {
	a := newLeaseApplier(t, "a", "b", "c")
	a.do(acquire("b", "x", 1, true))
	a.do(acquire("a", "x", 5, true))
	a.do(acquire("c", "x", 1, true))
	if r := a.do(acquire("a", "x", 6, true)); !r.Queued {
		t.Fatalf("a's newer request not queued: %+v", r)
	}
	a.do(release("b", "x", 1))
	if h, _, req, ok := a.f.View().Grant("x"); !ok || h != "a" || req != 6 {
		t.Fatalf("grant went to %q request %d, want a's request 6 (first in line)", h, req)
	}
	if l, _ := a.f.View().Lease("x"); len(l.Waiters) != 1 || l.Waiters[0].Session != "c" {
		t.Fatalf("waiters %+v, want c only", l.Waiters)
	}
	// An older copy of request 5 arriving now changes nothing.
	a.do(acquire("a", "x", 5, true))
	if h, _, req, _ := a.f.View().Grant("x"); h != "a" || req != 6 {
		t.Fatalf("a stale acquire moved the grant to %q request %d", h, req)
	}
}
