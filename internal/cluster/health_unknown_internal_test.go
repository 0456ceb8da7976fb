package cluster

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// TestGroupHealthUnknownWithoutLeader: a node's group verdict is known only
// while it knows a raft leader and the judgement is recent; it turns
// unknown the moment raft on this node knows no leader (with 2 of 3 voters
// killed it used to show the last "3 of 3 healthy" for up to
// 2 × ReconcileInterval), and says why.
func TestGroupHealthUnknownWithoutLeader(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "b", newFakeNet(), clk, func(o *Options) { o.ReconcileInterval = 10 * time.Second })
	if g := n.GroupHealth(); g.Known || g.Unknown != "no raft leader known" {
		t.Fatalf("before any judgement, no leader: %+v", g)
	}
	n.raft.mu.Lock()
	n.raft.leader = "addr-a"
	n.raft.mu.Unlock()
	if g := n.GroupHealth(); g.Known || g.Unknown != "no judgement received yet" {
		t.Fatalf("before any judgement, a leader: %+v", g)
	}
	n.noteHealth(&wire.HealthReport{Term: n.raft.CurrentTerm(), Leader: "id-a", FailureTolerance: 1,
		Voters: []wire.VoterReport{{ID: "id-a", Healthy: true}, {ID: "id-b", Healthy: true}, {ID: "id-c", Healthy: true}}})
	clk.Advance(3 * time.Second)
	g := n.GroupHealth()
	if !g.Known || g.Unknown != "" || g.Age != 3*time.Second || g.FailureTolerance != 1 {
		t.Fatalf("fresh judgement with a leader: %+v", g)
	}
	n.raft.mu.Lock()
	n.raft.leader = ""
	n.raft.mu.Unlock()
	g = n.GroupHealth()
	if g.Known || g.Unknown != "no raft leader known" || !g.Degraded() || g.Age != 3*time.Second {
		t.Fatalf("no leader known: %+v, want unknown at once, with the last figures' age", g)
	}
	n.raft.mu.Lock()
	n.raft.leader = "addr-a"
	n.raft.mu.Unlock()
	clk.Advance(30 * time.Second)
	if g := n.GroupHealth(); g.Known || g.Unknown != "no judgement from the raft leader for 33s" {
		t.Fatalf("stale judgement: %+v", g)
	}
}
