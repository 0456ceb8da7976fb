package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// leave is the command a node sends to give up request req: it releases
// the grant that answered req, or takes req out of the queue.
func leave(session, name string, req uint64) Command {
	return Command{Op: OpRelease, Lease: &LeaseCmd{Name: name, Session: session, Request: req}}
}

func newLeaseApplier(t testing.TB, sessions ...string) *applier {
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

// leaseNet delivers lease commands the way a network of retries, delays
// and duplicates may: each command sent is applied once, later, twice or
// (rarely) never, in an order that mixes commands of different sessions
// and of one session.
type leaseNet struct {
	a      *applier
	given  map[string]map[uint64]bool // session/name → requests given up (a leave was applied)
	queue  []Command
	nextRq map[string]uint64 // session → its latest request
	nameOf map[string]string // session → the name of its latest request
	inc    map[string]int    // node → its session's incarnation
}

// sessionOf is node's current session ID (a new one per incarnation, as
// nodes make them).
func (n *leaseNet) sessionOf(node string) string { return fmt.Sprintf("%s.%d", node, n.inc[node]) }

func newLeaseNet(t testing.TB) *leaseNet {
	return &leaseNet{a: newLeaseApplier(t, "s0.0", "s1.0", "s2.0"), given: map[string]map[uint64]bool{},
		nextRq: map[string]uint64{}, nameOf: map[string]string{}, inc: map[string]int{}}
}

// check asserts the request rules over the current view: no lease is held
// or waited for by a request whose leave was applied, and no session holds
// or waits for one name twice.
func (n *leaseNet) check(t testing.TB, what string) {
	t.Helper()
	for _, l := range n.a.f.View().Leases() {
		seen := map[string]bool{l.Holder: true}
		if n.given[l.Holder+"/"+l.Name][l.Request] {
			t.Fatalf("%s: %s held by %s for request %d, given up before", what, l.Name, l.Holder, l.Request)
		}
		for _, w := range l.Waiters {
			if seen[w.Session] {
				t.Fatalf("%s: %s holds or waits for %s twice: %+v", what, w.Session, l.Name, l)
			}
			seen[w.Session] = true
			if n.given[w.Session+"/"+l.Name][w.Request] {
				t.Fatalf("%s: %s waits for %s under request %d, given up before", what, w.Session, l.Name, w.Request)
			}
		}
	}
}

// deliver applies c and records which requests were given up.
func (n *leaseNet) deliver(c Command) {
	n.a.do(c)
	if c.Op == OpRelease && c.Lease.Request != 0 {
		k := c.Lease.Session + "/" + c.Lease.Name
		if n.given[k] == nil {
			n.given[k] = map[uint64]bool{}
		}
		n.given[k][c.Lease.Request] = true
	}
}

// step drives one random action of node (choice in [0, 8)).
func (n *leaseNet) step(choice int, node, name string, wait bool) {
	s := n.sessionOf(node)
	switch choice {
	case 0, 1: // a new request, maybe delivered later
		n.nextRq[s]++
		n.nameOf[s] = name
		n.queue = append(n.queue, acquire(s, name, n.nextRq[s], wait))
	case 2: // give up the latest request
		if r := n.nextRq[s]; r > 0 {
			n.queue = append(n.queue, leave(s, n.nameOf[s], r))
		}
	case 3: // release what the session holds, as Release does
		if h, tok, req, ok := n.a.f.View().Grant(name); ok && h == s {
			n.queue = append(n.queue, Command{Op: OpRelease, Lease: &LeaseCmd{Name: name, Session: s, Request: req, Token: tok}})
		}
	case 4, 5: // deliver the oldest command in flight
		if len(n.queue) > 0 {
			n.deliver(n.queue[0])
			n.queue = n.queue[1:]
		}
	case 6: // deliver the newest, and keep a copy for later (duplicate)
		if len(n.queue) > 0 {
			c := n.queue[len(n.queue)-1]
			n.deliver(c)
			n.queue = append([]Command{c}, n.queue[:len(n.queue)-1]...)
		}
	case 7: // the node's session ends; it opens a new one
		n.deliver(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: s}})
		n.inc[node]++
		n.deliver(createSession(n.sessionOf(node)))
	}
}

// TestLeaseRequestsUnderLateAndDuplicateDelivery applies random lease
// requests delivered late, twice or out of order, and checks after every
// command that nothing given up holds or waits, that no session appears
// twice for a name, and that replicas (one restored from a snapshot
// midway) agree byte for byte. It runs 300 seeds (40 with -short);
// HOLDFAST_FSM_SEEDS=N runs N.
func TestLeaseRequestsUnderLateAndDuplicateDelivery(t *testing.T) {
	seeds := uint64(300)
	if testing.Short() {
		seeds = 40
	}
	if v := os.Getenv("HOLDFAST_FSM_SEEDS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("HOLDFAST_FSM_SEEDS=%q: want a positive number", v)
		}
		seeds = n
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 14))
		n := newLeaseNet(t)
		var restored *applier
		for i := 0; i < 400; i++ {
			s := fmt.Sprintf("s%d", rng.IntN(3))
			before := n.a.index
			n.step(rng.IntN(8), s, fmt.Sprintf("l%d", rng.IntN(2)), rng.IntN(4) != 0)
			n.check(t, fmt.Sprintf("seed %d step %d", seed, i))
			if restored != nil {
				replayInto(t, n.a, restored, before)
			}
			if i == 200 {
				restored = n.a.restoredCopy()
			}
		}
		sa, _ := n.a.f.EncodeSnapshot()
		sr, _ := restored.f.EncodeSnapshot()
		if !bytes.Equal(sa, sr) {
			t.Fatalf("seed %d: a replica restored midway diverged", seed)
		}
	}
}

// replayInto applies to r the commands a applied after index from (it
// keeps their encodings in a.log).
func replayInto(t testing.TB, a, r *applier, from uint64) {
	t.Helper()
	for _, c := range a.log[from:] {
		r.do(c)
	}
}

// FuzzLeaseRequests drives the same checks from fuzzer input: each byte
// picks an action, a session, a name and wait.
func FuzzLeaseRequests(f *testing.F) {
	f.Add([]byte{0, 8, 2, 4, 4, 6, 4, 3, 4})
	f.Add([]byte{1, 17, 4, 2, 6, 6, 4, 4, 0, 4, 7, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := newLeaseNet(t)
		for _, x := range b {
			n.step(int(x%8), fmt.Sprintf("s%d", (x/8)%3), fmt.Sprintf("l%d", (x/24)%2), x/48 != 0)
			n.check(t, fmt.Sprintf("input %v", b))
		}
	})
}

// TestRequestMarksArePerName: one node numbers the requests of all its
// names from one counter and they may commit in any order across names: a
// request for one name is never stale because of a later one for another.
func TestRequestMarksArePerName(t *testing.T) {
	a := newLeaseApplier(t, "a")
	a.do(acquire("a", "x", 6, true))
	if r := a.do(acquire("a", "y", 5, true)); r.Stale || r.Holder != "a" || r.Request != 5 {
		t.Fatalf("acquire of y request 5 after x request 6: %+v", r)
	}
	a.do(leave("a", "z", 9))
	if r := a.do(acquire("a", "x", 7, false)); r.Stale {
		t.Fatalf("a leave of z made x's request 7 stale: %+v", r)
	}
	if r := a.do(acquire("a", "z", 8, false)); !r.Stale {
		t.Fatalf("acquire of z request 8 after its leave of 9 was not stale: %+v", r)
	}
	if r := a.restoredCopy().do(acquire("a", "z", 9, true)); !r.Stale {
		t.Fatalf("a restored replica forgot z's mark: %+v", r)
	}
}
