package cluster

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/membership"
)

// TestGossipFailedVoterKeptWhileHeard checks the rule that keeps a voter
// whose gossip alone is cut off: gossip must report it failed for
// DeadServerStabilization and its keepalives must have stopped reaching the
// leader for as long before autopilot may count it failed.
func TestGossipFailedVoterKeptWhileHeard(t *testing.T) {
	const dss = 2 * time.Second
	now := time.Now()
	c := &Coordinator{cfg: Config{DeadServerStabilization: dss}, lessor: &lessor{}}
	c.lessor.c = c
	d := &pilotDelegate{c: c}
	member := func(since time.Duration) membership.Member {
		return membership.Member{Name: "n1", Meta: membership.Meta{NodeID: "id1"},
			State: membership.Failed, Since: now.Add(-since)}
	}
	cases := []struct {
		name   string
		active bool          // the lessor is active (this node leads)
		heard  time.Duration // time since the last keepalive; < 0: never
		failed time.Duration // time gossip has reported the member failed
		want   bool
	}{
		{"fresh gossip failure", true, -1, dss / 2, false},
		{"old failure, never heard", true, -1, 2 * dss, true},
		{"old failure, lessor inactive", false, -1, 2 * dss, true},
		{"old failure, heard recently", true, dss / 4, 2 * dss, false},
		{"old failure, heard long ago", true, 2 * dss, 2 * dss, true},
	}
	for _, tc := range cases {
		c.lessor.heard = nil
		if tc.active {
			c.lessor.heard = map[string]time.Time{}
			if tc.heard >= 0 {
				c.lessor.heard["id1"] = now.Add(-tc.heard)
			}
		}
		if got := d.failed(member(tc.failed)); got != tc.want {
			t.Errorf("%s: failed = %v, want %v", tc.name, got, tc.want)
		}
	}
	// An answered stats poll proves the node alive as a keepalive does.
	c.lessor.heard = map[string]time.Time{}
	c.lessor.noteHeard("id1", now.Add(-dss/4))
	if d.failed(member(2 * dss)) {
		t.Error("old gossip failure, stats poll answered recently: counted failed")
	}
	c.lessor.heard = nil
	c.lessor.noteHeard("id1", now) // not leading: nothing recorded
	if !d.failed(member(2 * dss)) {
		t.Error("stats answer recorded while the lessor is inactive")
	}
}
