package session

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// TestLessorHeardOnlyWhileActive: the leader's record of nodes that reached
// it (keepalives, answered stats polls), which keeps a voter whose gossip
// alone is cut off, holds only while the lessor is active: an inactive
// lessor records nothing and has heard nobody.
func TestLessorHeardOnlyWhileActive(t *testing.T) {
	const d = 2 * time.Second
	now := time.Now()
	l := NewLessor(LessorOptions{Term: func() uint64 { return 1 }})
	l.NoteHeard("id1", now)
	if l.HeardWithin("id1", d, now) {
		t.Error("inactive lessor recorded a node as heard")
	}
	l.Activate(fsm.New().View())
	l.NoteHeard("id1", now.Add(-d/4))
	if !l.HeardWithin("id1", d, now) {
		t.Error("active lessor: a node heard d/4 ago is not heard within d")
	}
	l.NoteHeard("id1", now.Add(-2*d)) // older news does not move it back
	if !l.HeardWithin("id1", d, now) {
		t.Error("an older note replaced a newer one")
	}
	if l.HeardWithin("id1", d, now.Add(2*d)) {
		t.Error("heard 2d+ ago counts as heard within d")
	}
	l.Deactivate()
	if l.HeardWithin("id1", d, now) {
		t.Error("a deactivated lessor still reports a node as heard")
	}
}

// TestSessionAnsweredOncePerActivation: a session counts as answered (the
// balancer may give it shards) only once this activation answered one of
// its keepalives; the first answer wakes who waits on AnsweredChanged, and
// a new activation (a new term) starts with no session answered.
func TestSessionAnsweredOncePerActivation(t *testing.T) {
	r := newLessorRig(t, 3)
	r.rep.create(t, "s1", testTTL)
	r.rep.create(t, "s2", testTTL)
	r.l.Activate(r.rep.f.View())
	changed := r.l.AnsweredChanged()
	if r.l.Answered("s1") {
		t.Fatal("s1 answered before any keepalive")
	}
	if _, err := r.keepAlive(t, "s1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("the first answer did not wake AnsweredChanged")
	}
	if !r.l.Answered("s1") || r.l.Answered("s2") {
		t.Fatalf("answered: s1 %v, s2 %v; want only s1", r.l.Answered("s1"), r.l.Answered("s2"))
	}
	again := r.l.AnsweredChanged()
	if _, err := r.keepAlive(t, "s1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again:
		t.Fatal("a second answer of s1 woke AnsweredChanged")
	default:
	}
	r.l.Deactivate()
	r.l.Activate(r.rep.f.View())
	if r.l.Answered("s1") {
		t.Fatal("a new activation inherited s1 as answered")
	}
}
