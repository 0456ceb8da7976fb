package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/transport"
)

// TestPromotionAsksTheCandidateFirst: autopilot's AddVoter reaches raft
// only for a candidate that answers the leader now. A candidate that died
// after autopilot's last stats poll (so still judged healthy) is not
// promoted: with a voter down, the promotion could not commit without it,
// and the cluster would be left with no electable majority (found by
// TestSimulation seed 1667: a node wiped and restarted twice, its second
// identity promoted 0.3 s after it was killed, the first one still a
// voter).
func TestPromotionAsksTheCandidateFirst(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	lead := newTestNode(t, "a", net, clk, nil)
	newTestNode(t, "b", net, clk, nil)
	inner := &fakeRaft{}
	r := checkedRaft{Raft: inner, probe: lead.probeCandidate}
	dead := raft.ServerAddress(transport.RaftAddress(addrOf("c"), "id-c"))
	net.down[addrOf("c")] = true
	if err := r.AddVoter("id-c", dead, 0, time.Second).Error(); err == nil {
		t.Fatal("a candidate that does not answer was promoted")
	}
	live := raft.ServerAddress(transport.RaftAddress(addrOf("b"), "id-b"))
	if err := r.AddVoter("id-b", live, 0, time.Second).Error(); err != nil {
		t.Fatalf("a candidate that answers: %v", err)
	}
	if len(inner.promoted) != 1 || inner.promoted[0] != "id-b" {
		t.Fatalf("raft's AddVoter calls %v, want only the answering candidate", inner.promoted)
	}
	if !lead.heard.HeardWithin("id-b", time.Second, clk.Time()) {
		t.Error("the candidate answered but is not recorded as heard")
	}
}
