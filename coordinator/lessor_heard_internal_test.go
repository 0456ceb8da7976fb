package coordinator

import (
	"testing"
	"time"
)

// TestLessorHeardOnlyWhileActive: the leader's record of nodes that reached
// it (keepalives, answered stats polls), which keeps a voter whose gossip
// alone is cut off (internal/cluster), holds only while the lessor is
// active: an inactive lessor records nothing and has heard nobody.
func TestLessorHeardOnlyWhileActive(t *testing.T) {
	const d = 2 * time.Second
	now := time.Now()
	l := &lessor{}
	l.noteHeard("id1", now)
	if l.heardWithin("id1", d, now) {
		t.Error("inactive lessor recorded a node as heard")
	}
	l.heard = map[string]time.Time{} // active
	l.noteHeard("id1", now.Add(-d/4))
	if !l.heardWithin("id1", d, now) {
		t.Error("active lessor: a node heard d/4 ago is not heard within d")
	}
	l.noteHeard("id1", now.Add(-2*d)) // older news does not move it back
	if !l.heardWithin("id1", d, now) {
		t.Error("an older note replaced a newer one")
	}
	if l.heardWithin("id1", d, now.Add(2*d)) {
		t.Error("heard 2d+ ago counts as heard within d")
	}
}
