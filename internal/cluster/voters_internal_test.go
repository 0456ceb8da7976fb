package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TestGossipFailedVoterKeptWhileHeard checks the rule that keeps a voter
// whose gossip alone is cut off: gossip must report it failed for
// DeadServerStabilization and it must not have reached the leader over RPC
// for as long before autopilot may count it failed.
func TestGossipFailedVoterKeptWhileHeard(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "leader", newFakeNet(), clk, nil)
	d := &pilotDelegate{cl: n.Cluster}
	member := func(since time.Duration) membership.Member {
		return membership.Member{Name: "n1", Meta: membership.Meta{NodeID: "id1"},
			State: membership.Failed, Since: clk.Time().Add(-since)}
	}
	cases := []struct {
		name   string
		heard  time.Duration // time since the node last reached the leader; < 0: never
		failed time.Duration // time gossip has reported the member failed
		want   bool
	}{
		{"fresh gossip failure", -1, testDead / 2, false},
		{"old failure, never heard", -1, 2 * testDead, true},
		{"old failure, heard recently", testDead / 4, 2 * testDead, false},
		{"old failure, heard long ago", 2 * testDead, 2 * testDead, true},
	}
	for _, tc := range cases {
		n.heard.heard = nil
		if tc.heard >= 0 {
			n.heard.NoteHeard("id1", clk.Time().Add(-tc.heard))
		}
		if got := d.failed(member(tc.failed)); got != tc.want {
			t.Errorf("%s: failed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStatsPollProvesReach: a server that answers the leader's stats poll
// is recorded as heard (so gossip alone cannot fail it) and reports its
// progress; one that does not answer is unhealthy at once (no contact).
func TestStatsPollProvesReach(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	lead := newTestNode(t, "a", net, clk, nil)
	newTestNode(t, "b", net, clk, nil)
	net.down[addrOf("c")] = true
	servers := map[raft.ServerID]*autopilot.Server{
		"id-b": {ID: "id-b", Address: transport.RaftAddress(addrOf("b"), "id-b")},
		"id-c": {ID: "id-c", Address: transport.RaftAddress(addrOf("c"), "id-c")},
	}
	stats := (&pilotDelegate{cl: lead.Cluster}).FetchServerStats(context.Background(), servers)
	if !lead.heard.HeardWithin("id-b", time.Second, clk.Time()) {
		t.Error("b answered the stats poll but is not recorded as heard")
	}
	if lead.heard.HeardWithin("id-c", time.Second, clk.Time()) {
		t.Error("c did not answer but is recorded as heard")
	}
	if st := stats["id-c"]; st == nil || st.LastContact >= 0 {
		t.Errorf("unanswered poll: stats %+v, want LastContact < 0 (unhealthy now)", st)
	}
	if st := stats["id-b"]; st == nil || st.LastContact != 0 || st.LastIndex != 7 {
		t.Errorf("answered poll: stats %+v, want b's progress (contact 0, index 7)", st)
	}
}

// TestKnownServers: gossip's verdicts become autopilot's: left is left at
// once, failed only once failed() holds, members of a foreign cluster are
// not known, and members without a data dir are never voter candidates.
func TestKnownServers(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", newFakeNet(), clk, nil)
	failedLong := member("f", membership.Failed, true, "")
	failedLong.Since = clk.Time().Add(-2 * testDead)
	failedShort := member("s", membership.Failed, true, "")
	failedShort.Since = clk.Time().Add(-testDead / 2)
	n.members.set(member("a", membership.Alive, true, ""), member("l", membership.Left, true, ""),
		failedLong, failedShort, member("x", membership.Alive, true, "other"), member("nv", membership.Alive, false, ""))
	known := (&pilotDelegate{cl: n.Cluster}).KnownServers()
	want := map[raft.ServerID]autopilot.NodeStatus{"id-a": autopilot.NodeAlive, "id-l": autopilot.NodeLeft,
		"id-f": autopilot.NodeFailed, "id-s": autopilot.NodeAlive, "id-nv": autopilot.NodeAlive}
	if len(known) != len(want) {
		t.Errorf("known %d servers, want %d (a foreign member must not be known)", len(known), len(want))
	}
	for id, st := range want {
		if s := known[id]; s == nil || s.NodeStatus != st {
			t.Errorf("%s: %+v, want status %s", id, s, st)
		}
	}
	if s := known["id-nv"]; s == nil || s.NodeType != nodeNonVoter {
		t.Errorf("member without a data dir: %+v, want node type %s", s, nodeNonVoter)
	}
}
