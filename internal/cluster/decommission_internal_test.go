package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TestPlanLeave: the next step of a decommission, or its refusal, for the
// configurations that matter: promote before removing when too few voters
// would remain, refuse without a replacement unless forced, and never take
// a step whose new configuration's healthy voters are not its quorum.
func TestPlanLeave(t *testing.T) {
	type cfg struct {
		voters, nonvoters []string
	}
	for _, tc := range []struct {
		name        string
		c           cfg
		unhealthy   []string
		want        int // Config.Voters
		force       bool
		replacement string
		pending     bool
		step        leaveStep
		refused     string // in the refusal's text; "" for none
	}{
		{"gone", cfg{voters: []string{"b", "c"}}, nil, 3, false, "", false, leaveStep{gone: true}, ""},
		{"non-voter", cfg{voters: []string{"b", "c", "d"}, nonvoters: []string{"x"}}, nil, 3, false, "", false, leaveStep{remove: true}, ""},
		{"last voter", cfg{voters: []string{"x"}}, nil, 1, true, "", false, leaveStep{}, "last voter"},
		{"spare voter", cfg{voters: []string{"x", "b", "c", "d"}}, nil, 3, false, "", false, leaveStep{remove: true}, ""},
		{"replacement first", cfg{voters: []string{"x", "b", "c"}, nonvoters: []string{"d"}}, nil, 3, false, "d", false, leaveStep{promote: "d"}, ""},
		{"no replacement", cfg{voters: []string{"x", "b", "c"}}, nil, 3, false, "", false, leaveStep{}, "force"},
		{"no replacement, forced", cfg{voters: []string{"x", "b", "c"}}, nil, 3, true, "", false, leaveStep{remove: true}, ""},
		{"forced without a quorum left", cfg{voters: []string{"x", "b", "c"}}, []string{"c"}, 3, true, "", false, leaveStep{}, "1 of 2 healthy"},
		{"replacement restores the quorum", cfg{voters: []string{"x", "b", "c"}, nonvoters: []string{"d"}}, []string{"c"}, 3, false, "d", false, leaveStep{promote: "d"}, ""},
		{"spare voter, no quorum left", cfg{voters: []string{"x", "b", "c", "d"}}, []string{"c", "d"}, 3, false, "", false, leaveStep{}, "1 of 3 healthy"},
		{"replacement on its way", cfg{voters: []string{"x", "b", "c"}, nonvoters: []string{"d"}}, nil, 3, false, "", true, leaveStep{wait: true}, ""},
		{"replacement on its way, forced", cfg{voters: []string{"x", "b", "c"}, nonvoters: []string{"d"}}, nil, 3, true, "", true, leaveStep{remove: true}, ""},
		{"five voters, two down, replacement", cfg{voters: []string{"x", "b", "c", "d", "e"}, nonvoters: []string{"f"}}, []string{"d", "e"}, 5, false, "f", false, leaveStep{promote: "f"}, ""},
	} {
		var servers []raft.Server
		for _, v := range tc.c.voters {
			servers = append(servers, raft.Server{ID: raft.ServerID(v), Suffrage: raft.Voter})
		}
		for _, v := range tc.c.nonvoters {
			servers = append(servers, raft.Server{ID: raft.ServerID(v), Suffrage: raft.Nonvoter})
		}
		step, err := planLeave(leaveFacts{servers: servers, id: "x", voters: tc.want, force: tc.force,
			replacement: raft.ServerID(tc.replacement), pending: tc.pending,
			healthy: func(id raft.ServerID) bool { return !slices.Contains(tc.unhealthy, string(id)) }})
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (!errors.Is(err, wire.ErrLeaveRefused) || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: error %v, want a refusal naming %q", tc.name, err, tc.refused)
		case err == nil && step != tc.step:
			t.Errorf("%s: step %+v, want %+v", tc.name, step, tc.step)
		}
	}
}

// leaveGroup is a leader a with voters a, b and c and, with spare, an
// eligible non-voter d that autopilot judges healthy and stable; every
// node is alive in gossip and on the fake network.
func leaveGroup(t *testing.T, spare bool) (leader, follower *testNode) {
	t.Helper()
	net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
	leader = newTestNode(t, "a", net, clk, nil)
	follower = newTestNode(t, "b", net, clk, nil)
	leaderOf(leader, "a", "b", "c")
	follower.raft.leader = transport.RaftAddress(addrOf("a"), "id-a")
	st := &autopilot.State{Leader: "id-a", Servers: map[raft.ServerID]*autopilot.ServerState{}}
	names := []string{"a", "b", "c"}
	if spare {
		names = append(names, "d")
		leader.raft.servers = append(leader.raft.servers, raft.Server{ID: "id-d", Suffrage: raft.Nonvoter,
			Address: transport.RaftAddress(addrOf("d"), "id-d")})
	}
	var ms []membership.Member
	for _, n := range names {
		ms = append(ms, member(n, membership.Alive, true, ""))
		st.Servers[raft.ServerID("id-"+n)] = &autopilot.ServerState{
			Server: autopilot.Server{ID: raft.ServerID("id-" + n), NodeType: autopilot.NodeVoter, NodeStatus: autopilot.NodeAlive},
			Health: autopilot.ServerHealth{Healthy: true, StableSince: clk.Time().Add(-time.Hour)},
		}
	}
	leader.members.set(ms...)
	leader.judge = func() *autopilot.State { return st }
	return leader, follower
}

func voterIDs(servers []raft.Server) []string {
	var out []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			out = append(out, string(s.ID))
		}
	}
	slices.Sort(out)
	return out
}

// TestLeaveThroughTheLeader: a follower voter's Leave reaches the leader,
// which promotes the stable non-voter first and then removes the leaver
// (a dry run first changes nothing); without a spare the leave is refused
// and nothing changes, and forced it removes the leaver.
func TestLeaveThroughTheLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, b := leaveGroup(t, true)
	rep, err := b.Leave(ctx, false, true)
	if err != nil || rep.Promoted != "id-d" || rep.Removed || len(leader.raft.promoted)+len(leader.raft.removed) > 0 {
		t.Fatalf("dry run: %+v, %v; promoted %v, removed %v: want id-d named and no change", rep, err, leader.raft.promoted, leader.raft.removed)
	}
	rep, err = b.Leave(ctx, false, false)
	if err != nil || rep.Promoted != "id-d" || !rep.Removed {
		t.Fatalf("leave: %+v, %v", rep, err)
	}
	if !slices.Equal(leader.raft.promoted, []raft.ServerID{"id-d"}) || !slices.Equal(leader.raft.removed, []raft.ServerID{"id-b"}) {
		t.Errorf("promoted %v, removed %v; want id-d promoted, then id-b removed", leader.raft.promoted, leader.raft.removed)
	}
	if got := voterIDs(leader.raft.servers); !slices.Equal(got, []string{"id-a", "id-c", "id-d"}) {
		t.Errorf("voters after the leave: %v", got)
	}
	if leader.leaving.has("id-b") {
		t.Error("the leaver is still marked leaving after its leave returned")
	}

	leader, b = leaveGroup(t, false)
	if _, err := b.Leave(ctx, false, false); !errors.Is(err, wire.ErrLeaveRefused) {
		t.Fatalf("leave without a spare: %v, want a refusal", err)
	}
	if len(leader.raft.removed) > 0 || len(voterIDs(leader.raft.servers)) != 3 {
		t.Fatalf("a refused leave changed the configuration: removed %v", leader.raft.removed)
	}
	if rep, err := b.Leave(ctx, true, false); err != nil || !rep.Removed || rep.Promoted != "" {
		t.Fatalf("forced leave: %+v, %v", rep, err)
	}
	if got := voterIDs(leader.raft.servers); !slices.Equal(got, []string{"id-a", "id-c"}) {
		t.Errorf("voters after the forced leave: %v", got)
	}
}

// TestLeaveRetriesUntilALeaderIsKnown: with no leader known, Leave retries
// until its context ends and says no leader was known.
func TestLeaveRetriesUntilALeaderIsKnown(t *testing.T) {
	n := newTestNode(t, "b", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := n.Leave(ctx, false, false); !errors.Is(err, wire.ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("leave with no leader: %v", err)
	}
}

// TestPromoterReplacesALeavingVoter: while a voter is being decommissioned
// the promoter counts it as down: it promotes the stable candidate, and
// with one voter too many it demotes the leaver, not another; the leaver is
// never a candidate.
func TestPromoterReplacesALeavingVoter(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, time.Hour).add("b", "voter", "alive", "", true, time.Hour).
		add("c", "voter", "alive", "", true, time.Hour).add("d", "nonvoter", "alive", "", true, time.Hour)
	p := g.promoter(3)
	p.leaving = func(id string) bool { return id == "b" }
	cfg := &autopilot.Config{ServerStabilizationTime: testStable}
	if ch := p.CalculatePromotionsAndDemotions(cfg, g.state); !slices.Equal(ch.Promotions, []raft.ServerID{"d"}) {
		t.Errorf("with b leaving: changes %+v, want d promoted", ch)
	}
	g.setVoter("d", true)
	if ch := p.CalculatePromotionsAndDemotions(cfg, g.state); !slices.Equal(ch.Demotions, []raft.ServerID{"b"}) {
		t.Errorf("four voters with b leaving: changes %+v, want b demoted", ch)
	}
	g.setVoter("b", false)
	g.setVoter("d", true)
	p.leaving = func(id string) bool { return id == "b" || id == "c" }
	if ch := p.CalculatePromotionsAndDemotions(cfg, g.state); slices.Contains(ch.Promotions, "b") {
		t.Errorf("a leaving non-voter promoted: %+v", ch)
	}
}

// TestReconcileMovesARestartedMember: a member of the configuration that
// now advertises another RPC address gets the new address, with its
// suffrage, once it proves its identity there; an unverified one keeps the
// old address.
func TestReconcileMovesARestartedMember(t *testing.T) {
	net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", net, clk, func(o *Options) { o.TLS = true })
	for _, name := range []string{"b", "nv"} { // they answer the identity check at their new addresses
		newTestNode(t, name, net, clk, nil)
		net.nodes[name+"2:7000"] = net.nodes[addrOf(name)]
	}
	leaderOf(n, "a", "b")
	n.raft.servers = append(n.raft.servers, raft.Server{ID: "id-nv", Suffrage: raft.Nonvoter, Address: transport.RaftAddress(addrOf("nv"), "id-nv")})
	moved := func(name, addr string) membership.Member {
		m := member(name, membership.Alive, true, "")
		m.Meta.RPCAddr = addr
		return m
	}
	n.members.set(member("a", membership.Alive, true, ""), moved("b", "b2:7000"), moved("nv", "nv2:7000"))
	net.verify["nv2:7000"] = errors.New("certificate names another node")
	n.reconcileMembers()
	want := map[raft.ServerID]raft.Server{
		"id-a":  {ID: "id-a", Suffrage: raft.Voter, Address: transport.RaftAddress(addrOf("a"), "id-a")},
		"id-b":  {ID: "id-b", Suffrage: raft.Voter, Address: transport.RaftAddress("b2:7000", "id-b")},
		"id-nv": {ID: "id-nv", Suffrage: raft.Nonvoter, Address: transport.RaftAddress(addrOf("nv"), "id-nv")},
	}
	for _, s := range n.raft.servers {
		if want[s.ID] != s {
			t.Errorf("server %+v, want %+v", s, want[s.ID])
		}
	}
	delete(net.verify, "nv2:7000")
	n.reconcileMembers()
	for _, s := range n.raft.servers {
		if s.ID == "id-nv" && (s.Suffrage != raft.Nonvoter || s.Address != transport.RaftAddress("nv2:7000", "id-nv")) {
			t.Errorf("verified non-voter after the move: %+v", s)
		}
	}
}

// TestRPCAddrOf: raft's dials follow the address of the one live member
// claiming an ID; a failed member, a member of another cluster and an ID
// claimed by two live members give none.
func TestRPCAddrOf(t *testing.T) {
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), nil)
	twin := member("twin", membership.Alive, true, "")
	twin.Meta.NodeID = "id-b"
	foreign := member("f", membership.Alive, true, "other")
	n.members.set(member("b", membership.Alive, true, ""), member("c", membership.Failed, true, ""), foreign)
	if addr, ok := n.RPCAddrOf("id-b"); !ok || addr != addrOf("b") {
		t.Errorf("live b: %q %v", addr, ok)
	}
	if err := n.o.Record.Set("ours", 0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"id-c", "id-f", "id-x"} {
		if addr, ok := n.RPCAddrOf(id); ok {
			t.Errorf("%s resolved to %s", id, addr)
		}
	}
	n.members.set(member("b", membership.Alive, true, ""), twin)
	if addr, ok := n.RPCAddrOf("id-b"); ok {
		t.Errorf("an ID claimed twice resolved to %s", addr)
	}
}
