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
