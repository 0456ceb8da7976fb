package coordinator_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestDeposedLeaderCannotExtendBelief reproduces the gap that lease rule 3
// in docs/ARCHITECTURE.md covers: the leader L keeps receiving from its followers (their
// acknowledgements still arrive) but its own messages no longer reach them,
// so they elect a new leader N while L still believes it leads and a holder
// H, who only hears from L, keeps sending L keepalives. It checks that every
// belief H obtained ends before N's deadline for H's session (N may then
// expire it and grant H's leases to others), and that L answered no
// keepalive that arrived after N took over.
func TestDeposedLeaderCannotExtendBelief(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3, InMemory: true, NoDataDir: []int{3}})
	cl.WaitFormed(formTimeout)
	h := cl.Node(3)
	cl.WaitFor("the holder in a session", formTimeout, func() error {
		if h.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	session := h.C().SessionID()
	// L is whoever leads just before the cut (on a loaded host leadership
	// may have moved since the cluster formed), and only a takeover after
	// the cut counts as N's.
	leader := cl.WaitLeader(formTimeout)
	var mu sync.Mutex
	var cut, activated time.Time
	var newLeader *holdfasttest.Node
	var answered []time.Time // arrivals of keepalives L answered
	var followers []*holdfasttest.Node
	for _, n := range cl.Running() {
		if n != leader && n != h {
			followers = append(followers, n)
			n.C().SetLessorHooks(func(at time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if activated.IsZero() && !cut.IsZero() && !at.Before(cut) {
					activated, newLeader = at, n
				}
			}, nil)
		}
	}
	leader.C().SetLessorHooks(nil, func(s string, arrived time.Time) {
		if s == session {
			mu.Lock()
			answered = append(answered, arrived)
			mu.Unlock()
		}
	})
	host := func(n *holdfasttest.Node) string { return fmt.Sprintf("n%d", n.Index) }
	mu.Lock()
	cut = time.Now()
	mu.Unlock()
	for _, f := range followers {
		cl.Net.DropOneWay(host(leader), host(f)) // L's heartbeats and confirmations are lost
		cl.Net.DropOneWay(host(f), host(h))      // H never hears of the new leader
	}
	// H keeps asking L until well after N took over, recording the belief
	// each answered keepalive gave it (starting with the one it had).
	// N's deadline for H is read as soon as N took over: it is fixed
	// (activation + TTL + grace, as H's keepalives never reach N), and
	// N could lose its leadership again before the loop ends.
	beliefs := []time.Time{h.C().SessionValidUntil()}
	var after, deadline time.Time
	for {
		if err := h.C().KeepAliveNow(); err == nil {
			beliefs = append(beliefs, h.C().SessionValidUntil())
		}
		mu.Lock()
		a, n := activated, newLeader
		mu.Unlock()
		if !a.IsZero() && deadline.IsZero() {
			deadline, _ = n.C().LessorDeadline(session)
		}
		if !a.IsZero() && after.IsZero() {
			after = time.Now().Add(time.Second)
		}
		if !after.IsZero() && time.Now().After(after) {
			break
		}
		if time.Since(cut) > formTimeout {
			t.Fatal("no new leader took over")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if deadline.IsZero() {
		t.Fatalf("new leader %s does not track the holder's session", newLeader.Name)
	}
	cfg := newLeader.C().Config()
	t.Logf("cut at 0, new leader %s active at %v, its deadline for H at %v (TTL %v + grace %v); %d keepalives answered by L, %d beliefs",
		newLeader.Name, activated.Sub(cut), deadline.Sub(cut), cfg.Session.TTL, cfg.Session.ExpiryGrace, len(answered), len(beliefs))
	for _, a := range answered {
		if a.After(activated) {
			t.Errorf("deposed leader answered a keepalive that arrived %v after the new leader took over", a.Sub(activated))
		}
	}
	for _, b := range beliefs {
		if !b.Before(deadline) {
			t.Errorf("holder believes until %v, past the new leader's deadline %v", b.Sub(cut), deadline.Sub(cut))
		}
	}
	if newLeader.C().RaftState() != coordinator.StateLeader {
		t.Logf("note: %s no longer leads at the end", newLeader.Name)
	}
	cl.Heal()
}
