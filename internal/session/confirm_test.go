package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestConfirmRoundQuorum: a confirmation round succeeds only when a
// majority of the voters (this node included) answer that they are in the
// leader's term; a voter in another term, or one that cannot be reached,
// counts as a no. So does the whole round when raft says this node does
// not lead, or leads in another term than the lessor's.
func TestConfirmRoundQuorum(t *testing.T) {
	type voter struct {
		term uint64
		down bool
	}
	cases := []struct {
		name   string
		others []voter // the voters other than this node
		ok     bool
	}{
		{"alone", nil, true},
		{"3: both yes", []voter{{7, false}, {7, false}}, true},
		{"3: one yes", []voter{{7, false}, {8, false}}, true},
		{"3: one yes, one down", []voter{{7, false}, {7, true}}, true},
		{"3: both in a later term", []voter{{8, false}, {8, false}}, false},
		{"3: both down", []voter{{7, true}, {7, true}}, false},
		{"3: an earlier term and a later one", []voter{{6, false}, {8, false}}, false},
		{"5: two yes", []voter{{7, false}, {7, false}, {8, false}, {8, false}}, true},
		{"5: one yes", []voter{{7, false}, {8, false}, {8, false}, {7, true}}, false},
		{"4: one yes of four", []voter{{7, false}, {8, false}, {8, false}}, false},
		{"4: two yes of four", []voter{{7, false}, {7, false}, {8, false}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLessorRig(t, 1+len(tc.others))
			for i, v := range tc.others {
				r.voters.set(r.voters.voters[i+1].Addr, v.term, v.down)
			}
			r.l.Activate(r.rep.f.View())
			err := r.l.confirmRound(context.Background())
			if (err == nil) != tc.ok {
				t.Fatalf("round: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("not leading", func(t *testing.T) {
		r := newLessorRig(t, 3)
		r.l.Activate(r.rep.f.View())
		r.leading.Store(false)
		if err := r.l.confirmRound(context.Background()); err == nil {
			t.Fatal("round succeeded while raft says this node does not lead")
		}
	})
	t.Run("term moved since activation", func(t *testing.T) {
		r := newLessorRig(t, 3)
		r.l.Activate(r.rep.f.View())
		r.term.Store(8) // every voter would say yes to 8
		for _, v := range r.voters.voters {
			r.voters.set(v.Addr, 8, false)
		}
		if err := r.l.confirmRound(context.Background()); err == nil {
			t.Fatal("round succeeded in a later term than the lessor's")
		}
	})
	t.Run("inactive", func(t *testing.T) {
		r := newLessorRig(t, 1)
		if err := r.l.confirmRound(context.Background()); err == nil {
			t.Fatal("round succeeded on an inactive lessor")
		}
	})
}

// TestKeepAliveWaitsForItsOwnRound: a keepalive is answered only after a
// confirmation round that started after it arrived; one that arrives while
// a round is under way waits for the next round. A keepalive whose round
// fails is refused and extends nothing.
func TestKeepAliveWaitsForItsOwnRound(t *testing.T) {
	r := newLessorRig(t, 3)
	r.rep.create(t, "s1", testTTL)
	r.rep.create(t, "s2", testTTL)
	r.l.Activate(r.rep.f.View())
	gate := make(chan struct{})
	r.voters.mu.Lock()
	r.voters.gate = gate
	r.voters.mu.Unlock()

	type answer struct {
		id  string
		err error
	}
	answers := make(chan answer, 2)
	send := func(id string) {
		go func() {
			_, err := r.keepAlive(t, id)
			answers <- answer{id, err}
		}()
	}
	send("s1")
	testkit.Eventually(t, "the first round to ask the voters", time.Minute, testkit.Holds(func() bool { return r.voters.askedCount() == 2 }))
	send("s2") // arrives while the first round is under way
	testkit.Eventually(t, "the second keepalive to queue", time.Minute, testkit.Holds(func() bool { return len(r.l.spacedReq) == 1 }))
	select {
	case a := <-answers:
		t.Fatalf("keepalive for %s answered (%v) before any voter confirmed", a.id, a.err)
	default:
	}
	// The first round ends: only the keepalive that arrived before it
	// started is answered; the second waits for a round of its own.
	gate2 := make(chan struct{})
	r.voters.mu.Lock()
	r.voters.gate = gate2
	r.voters.mu.Unlock()
	close(gate)
	if a := <-answers; a.id != "s1" || a.err != nil {
		t.Fatalf("first answer: %s %v, want s1 answered", a.id, a.err)
	}
	// (A voter whose answer to the first round is not in yet when the
	// second starts is not asked again: at least one is asked anew.)
	testkit.Eventually(t, "the second round to ask the voters", time.Minute, testkit.Holds(func() bool { return r.voters.askedCount() >= 3 }))
	select {
	case a := <-answers:
		t.Fatalf("keepalive for %s answered (%v) by the round under way when it arrived", a.id, a.err)
	default:
	}
	r.voters.mu.Lock()
	r.voters.gate = nil
	r.voters.mu.Unlock()
	close(gate2)
	if a := <-answers; a.id != "s2" || a.err != nil {
		t.Fatalf("second answer: %s %v, want s2 answered", a.id, a.err)
	}

	// Both other voters moved on to a later term: refused, not extended.
	before, _ := r.l.Deadline("s1")
	r.wall.advance(time.Second)
	for _, v := range r.voters.voters[1:] {
		r.voters.set(v.Addr, 8, false)
	}
	if _, err := r.keepAlive(t, "s1"); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("keepalive without a quorum: %v, want the not-leader error", err)
	}
	if after, _ := r.l.Deadline("s1"); !after.Equal(before) {
		t.Fatalf("a keepalive refused for want of a quorum moved the deadline from %v to %v", before, after)
	}
}

// TestKeepAliveAcrossDeactivation: a keepalive whose round succeeded but
// whose lessor was deactivated (and maybe reactivated in a later term)
// meanwhile is refused: it arrived under another activation.
func TestKeepAliveAcrossDeactivation(t *testing.T) {
	r := newLessorRig(t, 3)
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	gate := make(chan struct{})
	r.voters.mu.Lock()
	r.voters.gate = gate
	r.voters.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := r.keepAlive(t, "s1")
		errc <- err
	}()
	testkit.Eventually(t, "the round to ask the voters", time.Minute, testkit.Holds(func() bool { return r.voters.askedCount() == 2 }))
	r.l.Deactivate()
	r.l.Activate(r.rep.f.View())
	close(gate)
	if err := <-errc; !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("keepalive across a re-activation: %v, want the not-leader error", err)
	}
}

// TestExpiryWaitsForKeepAliveInFlight: a session whose deadline passes
// while a keepalive for it waits for its confirmation round is not expired
// then (the leader may not have been able to process that keepalive yet):
// the expiry is decided only once the keepalive is answered, which extends
// the deadline to its arrival + TTL, or refused, after which the session
// is expired on the next pass. A keepalive is never answered once the
// expiry is decided (TestLessorKeepAliveRefusals).
func TestExpiryWaitsForKeepAliveInFlight(t *testing.T) {
	for _, roundOK := range []bool{true, false} {
		r := newLessorRig(t, 3)
		r.rep.create(t, "s1", testTTL)
		r.l.Activate(r.rep.f.View())
		gate := make(chan struct{})
		r.voters.mu.Lock()
		r.voters.gate = gate
		r.voters.mu.Unlock()
		if !roundOK {
			for _, v := range r.voters.voters[1:] {
				r.voters.set(v.Addr, 8, false)
			}
		}
		d, _ := r.l.Deadline("s1")
		arrived := r.wall.advance(d.Sub(r.wall.Now()) - time.Second)
		errc := make(chan error, 1)
		go func() {
			_, err := r.keepAlive(t, "s1")
			errc <- err
		}()
		testkit.Eventually(t, "the round to ask the voters", time.Minute, testkit.Holds(func() bool { return r.voters.askedCount() == 2 }))
		r.wall.advance(2 * time.Second) // the deadline passed mid-round
		r.step()
		if !r.rep.has("s1") || r.l.ExpiringOrDue("s1", arrived) {
			t.Fatalf("round ok=%v: session expired while its keepalive was in flight", roundOK)
		}
		if got := r.l.nextDeadline(); got > 100*time.Millisecond {
			t.Fatalf("round ok=%v: next pass in %v with a due session in flight, want within 100ms", roundOK, got)
		}
		close(gate)
		err := <-errc
		r.step()
		if roundOK {
			if err != nil {
				t.Fatalf("keepalive in flight at the deadline: %v, want answered", err)
			}
			if got, _ := r.l.Deadline("s1"); !got.Equal(arrived.Add(testTTL)) || !r.rep.has("s1") {
				t.Fatalf("after the answer: deadline %v (session kept %v), want arrival + TTL = %v", got, r.rep.has("s1"), arrived.Add(testTTL))
			}
			continue
		}
		if !errors.Is(err, errNotLeaderTest) {
			t.Fatalf("keepalive whose round failed: %v, want the not-leader error", err)
		}
		if r.rep.has("s1") {
			t.Fatal("session not expired once its only keepalive in flight was refused")
		}
	}
}

// TestConfirmedCommit: the read index is the commit index taken when the
// request arrived, returned only after a round confirms the leadership;
// an inactive lessor, a failed round or a re-activation refuse it.
func TestConfirmedCommit(t *testing.T) {
	r := newLessorRig(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit := uint64(41)
	commitIndex := func() uint64 { commit++; return commit }
	if _, err := r.l.ConfirmedCommit(ctx, commitIndex); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("inactive: %v", err)
	}
	r.l.Activate(r.rep.f.View())
	got, err := r.l.ConfirmedCommit(ctx, commitIndex)
	if err != nil || got != 42 {
		t.Fatalf("ConfirmedCommit = %d, %v; want 42 (read once, at arrival)", got, err)
	}
	if r.voters.askedCount() == 0 {
		t.Fatal("confirmed without asking the voters")
	}
	for _, v := range r.voters.voters[1:] {
		r.voters.set(v.Addr, 7, true)
	}
	if _, err := r.l.ConfirmedCommit(ctx, commitIndex); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("without a quorum: %v", err)
	}
}

// TestRoundLeavesTheSlowerVoterToAnswer: a round ends once it has its
// quorum, but the question to the slower voter is not cut off (cutting it
// could abandon a connection in its TLS handshake, which that voter counts
// as a refused handshake); while it is still unanswered, later rounds do
// not ask that voter again, and once it answered they do.
func TestRoundLeavesTheSlowerVoterToAnswer(t *testing.T) {
	r := newLessorRig(t, 3)
	r.l.Activate(r.rep.f.View())
	slow := make(chan struct{})
	r.voters.mu.Lock()
	r.voters.slow = map[string]chan struct{}{"addr-c": slow}
	r.voters.mu.Unlock()
	for round := 1; round <= 2; round++ {
		if err := r.l.confirmRound(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	// A round returns on its quorum (a and b), maybe before the goroutine
	// asking c has run: wait for c's first question to arrive.
	testkit.Eventually(t, "the slow voter's question", time.Minute, testkit.Holds(func() bool {
		r.voters.mu.Lock()
		defer r.voters.mu.Unlock()
		return r.voters.askedOf["addr-c"] >= 1
	}))
	r.voters.mu.Lock()
	asked, cut := r.voters.askedOf["addr-c"], r.voters.cut
	r.voters.mu.Unlock()
	if asked != 1 || cut != 0 {
		close(slow)
		t.Fatalf("the slow voter was asked %d times and %d questions were cut off; want 1 and 0", asked, cut)
	}
	close(slow)
	testkit.Eventually(t, "the slow voter's answer", time.Minute, testkit.Holds(func() bool { return !r.l.questionPending("c") }))
	if err := r.l.confirmRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the slow voter asked again", time.Minute, testkit.Holds(func() bool {
		r.voters.mu.Lock()
		defer r.voters.mu.Unlock()
		return r.voters.askedOf["addr-c"] == 2
	}))
}
