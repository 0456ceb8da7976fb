package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// leaderOf makes n the leader of a configuration of voters.
func leaderOf(n *testNode, voters ...string) {
	n.raft.state = raft.Leader
	for _, v := range voters {
		n.raft.servers = append(n.raft.servers, raft.Server{ID: raft.ServerID("id-" + v), Suffrage: raft.Voter,
			Address: transport.RaftAddress(addrOf(v), "id-"+v)})
	}
}

// TestReconcileAddsLiveMembersOnly: the leader adds live gossip members of
// its cluster (or fresh ones) as non-voters, never one that left, failed,
// belongs to another cluster, or is already in the configuration; a
// follower adds nobody.
func TestReconcileAddsLiveMembersOnly(t *testing.T) {
	net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", net, clk, nil)
	for _, name := range []string{"new", "nv", "x"} {
		newTestNode(t, name, net, clk, nil)
	}
	leaderOf(n, "a")
	n.members.set(member("a", membership.Alive, true, ""), member("new", membership.Alive, true, ""),
		member("nv", membership.Alive, false, ""), member("gone", membership.Left, true, ""),
		member("dead", membership.Failed, true, ""), member("x", membership.Alive, true, "other"))
	n.raft.state = raft.Follower
	n.reconcileMembers()
	if len(n.raft.added) != 0 {
		t.Fatalf("a follower added %v", n.raft.added)
	}
	n.raft.state = raft.Leader
	n.reconcileMembers()
	n.reconcileMembers() // a second pass adds nobody twice
	if want := []raft.ServerID{"id-new", "id-nv"}; !slices.Equal(n.raft.added, want) {
		t.Errorf("added %v, want %v", n.raft.added, want)
	}
}

// TestReconcileAdmitsOnlyVerifiedMembers: with TLS, a member whose RPC
// address does not prove its identity is not added; one that speaks no
// TLS is added only while plaintext is allowed.
func TestReconcileAdmitsOnlyVerifiedMembers(t *testing.T) {
	for _, require := range []bool{false, true} {
		net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
		n := newTestNode(t, "a", net, clk, func(o *Options) { o.TLS, o.RequireTLS = true, require })
		for _, name := range []string{"good", "bad", "plain"} {
			newTestNode(t, name, net, clk, nil)
		}
		leaderOf(n, "a")
		n.members.set(member("good", membership.Alive, true, ""), member("bad", membership.Alive, true, ""),
			member("plain", membership.Alive, true, ""))
		net.verify[addrOf("bad")] = errors.New("certificate names someone else")
		net.verify[addrOf("plain")] = transport.ErrPlaintextPeer
		n.reconcileMembers()
		want := []raft.ServerID{"id-good", "id-plain"}
		if require {
			want = want[:1]
		}
		if !slices.Equal(n.raft.added, want) {
			t.Errorf("RequireTLS %v: added %v, want %v", require, n.raft.added, want)
		}
	}
}

// TestReconcileAsksIdentity: the leader adds a member only when the
// member's own answer to the identity method shows its data dir belongs to
// no other cluster, whatever its gossip says: not one whose data dir
// records another cluster (gossiping none yet, as a restarted node of an
// earlier release did), not one that cannot be asked, not one whose address
// answers for another node; a member of an earlier release, which does not
// know the method, is added as before.
func TestReconcileAsksIdentity(t *testing.T) {
	net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", net, clk, nil)
	if err := n.o.Record.Set("ours", 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fresh", "same", "foreign", "old"} {
		m := newTestNode(t, name, net, clk, nil)
		switch name {
		case "same":
			_ = m.o.Record.Set("ours", 0)
		case "foreign":
			_ = m.o.Record.Set("theirs", 0)
		}
	}
	net.oldRelease = map[string]bool{addrOf("old"): true}
	impostor := member("impostor", membership.Alive, true, "")
	impostor.Meta.RPCAddr = addrOf("fresh") // the address answers for id-fresh
	leaderOf(n, "a")
	n.members.set(member("a", membership.Alive, true, ""), member("fresh", membership.Alive, true, ""),
		member("same", membership.Alive, true, ""), member("foreign", membership.Alive, true, ""),
		member("old", membership.Alive, true, ""), member("unreachable", membership.Alive, true, ""), impostor)
	n.reconcileMembers()
	if want := []raft.ServerID{"id-fresh", "id-same", "id-old"}; !slices.Equal(n.raft.added, want) {
		t.Errorf("added %v, want %v", n.raft.added, want)
	}
	var id wire.IdentityReply
	if err := net.Call(context.Background(), addrOf("foreign"), wire.MethodIdentity, struct{}{}, &id); err != nil ||
		id != (wire.IdentityReply{NodeID: "id-foreign", ClusterID: "theirs"}) {
		t.Errorf("identity of foreign: %+v, %v", id, err)
	}
}

// TestShutdownPlan: a graceful shutdown transfers leadership first when it
// leads and another voter is alive, and never removes a voter (it keeps its
// vote across a restart); a non-voter removes itself; the handoffs are
// planned only while the voters alive, this one included, form a quorum.
func TestShutdownPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leads  bool
		self   raft.ServerSuffrage // -1: not in the configuration
		voters []string            // other voters
		alive  []string            // of those, alive in gossip
		want   ShutdownSteps
	}{
		{"follower, both others alive", false, raft.Voter, []string{"b", "c"}, []string{"b", "c"}, ShutdownSteps{Quorum: true}},
		{"leader, both others alive", true, raft.Voter, []string{"b", "c"}, []string{"b", "c"}, ShutdownSteps{Quorum: true, Transfer: true}},
		{"one other alive of two", false, raft.Voter, []string{"b", "c"}, []string{"b"}, ShutdownSteps{Quorum: true}},
		{"leader, one other alive of two", true, raft.Voter, []string{"b", "c"}, []string{"b"}, ShutdownSteps{Quorum: true, Transfer: true}},
		{"leader, no other alive", true, raft.Voter, []string{"b", "c"}, nil, ShutdownSteps{}},
		{"two of five alive", false, raft.Voter, []string{"b", "c", "d", "e"}, []string{"b"}, ShutdownSteps{}},
		{"last voter", true, raft.Voter, nil, nil, ShutdownSteps{Quorum: true}},
		{"non-voter", false, raft.Nonvoter, []string{"b", "c"}, []string{"b", "c"}, ShutdownSteps{Quorum: true, RemoveSelf: true}},
		{"not in the configuration", false, -1, []string{"b", "c"}, []string{"b", "c"}, ShutdownSteps{Quorum: true}},
	} {
		n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), nil)
		leaderOf(n, tc.voters...)
		if tc.self >= 0 {
			n.raft.servers = append(n.raft.servers, raft.Server{ID: "id-a", Suffrage: tc.self, Address: transport.RaftAddress(addrOf("a"), "id-a")})
		}
		if !tc.leads {
			n.raft.state = raft.Follower
		}
		ms := []membership.Member{member("a", membership.Alive, true, "")}
		for _, v := range tc.voters {
			st := membership.Failed
			if slices.Contains(tc.alive, v) {
				st = membership.Alive
			}
			ms = append(ms, member(v, st, true, ""))
		}
		n.members.set(ms...)
		if got := n.ShutdownPlan(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestLeftMemberRemoved: a non-voter that left gossip is handed to
// autopilot as left and removed at once; a voter that left (a graceful
// shutdown, which keeps its vote across a restart) counts as failed only
// once gossip has said so for DeadServerStabilization without the node
// reaching the leader, and then the removal filter lets it go only while
// the configuration holds a voter beyond Voters.
func TestLeftMemberRemoved(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", newFakeNet(), clk, nil)
	leaderOf(n, "a", "b", "c", "gone")
	n.raft.servers = append(n.raft.servers, raft.Server{ID: "id-nvgone", Suffrage: raft.Nonvoter})
	left := func(name string) membership.Member {
		m := member(name, membership.Left, true, "")
		m.Since = clk.Time()
		return m
	}
	n.members.set(member("a", membership.Alive, true, ""), member("b", membership.Alive, true, ""),
		member("c", membership.Alive, true, ""), left("gone"), left("nvgone"))
	removals := func() []raft.ServerID {
		known := (&pilotDelegate{cl: n.Cluster}).KnownServers()
		out := newPromoter(n.Cluster).FilterFailedServerRemovals(nil, nil, failedServers(known, n.raft.servers))
		var removed []raft.ServerID
		for _, s := range out.FailedNonVoters {
			removed = append(removed, s.ID)
		}
		for _, s := range out.FailedVoters {
			removed = append(removed, s.ID)
		}
		return removed
	}
	if got, want := removals(), []raft.ServerID{"id-nvgone"}; !slices.Equal(got, want) {
		t.Errorf("just left: removed %v, want %v (the voter may be restarting)", got, want)
	}
	clk.Advance(testDead)
	if got, want := removals(), []raft.ServerID{"id-nvgone", "id-gone"}; !slices.Equal(got, want) {
		t.Errorf("left for DeadServerStabilization: removed %v, want %v (four voters, Voters 3: the left voter may go)", got, want)
	}
	n.heard.NoteHeard("id-gone", clk.Time())
	if got, want := removals(), []raft.ServerID{"id-nvgone"}; !slices.Equal(got, want) {
		t.Errorf("left but heard from: removed %v, want %v", got, want)
	}
}

// failedServers sorts the configuration's servers that gossip reports
// left or failed as autopilot does before it asks for removals.
func failedServers(known map[raft.ServerID]*autopilot.Server, servers []raft.Server) *autopilot.FailedServers {
	f := &autopilot.FailedServers{}
	for _, s := range servers {
		k := known[s.ID]
		if k == nil || (k.NodeStatus != autopilot.NodeLeft && k.NodeStatus != autopilot.NodeFailed) {
			continue
		}
		if s.Suffrage == raft.Voter {
			f.FailedVoters = append(f.FailedVoters, k)
		} else {
			f.FailedNonVoters = append(f.FailedNonVoters, k)
		}
	}
	return f
}

// TestMembersSuffrage: each gossip member carries its place in the raft
// configuration (voter, non-voter, or none); Voters lists the voters.
func TestMembersSuffrage(t *testing.T) {
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), nil)
	leaderOf(n, "a")
	n.raft.servers = append(n.raft.servers, raft.Server{ID: "id-b", Suffrage: raft.Nonvoter})
	n.members.set(member("a", membership.Alive, true, ""), member("b", membership.Alive, true, ""),
		member("c", membership.Alive, true, ""))
	got := map[string][2]bool{}
	for _, m := range n.Members() {
		got[m.Name] = [2]bool{m.InConfig, m.Voter}
	}
	want := map[string][2]bool{"a": {true, true}, "b": {true, false}, "c": {false, false}}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: in config, voter = %v, want %v", name, got[name], w)
		}
	}
	if v := n.Voters(); !slices.Equal(v, []string{"id-a"}) {
		t.Errorf("Voters() = %v, want [id-a]", v)
	}
	if name := n.NameOf("id-b"); name != "b" {
		t.Errorf("NameOf(id-b) = %q", name)
	}
}

// TestReconcileSkipsLeavingAndLeftServers: a server being decommissioned,
// or one that left for good through its own Leave, is not added back while
// gossip still shows it alive (it shuts down after leaving); one an
// operator removed (Decommission, not for good) is, once the removal ends.
func TestReconcileSkipsLeavingAndLeftServers(t *testing.T) {
	net, clk := newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0))
	n := newTestNode(t, "a", net, clk, nil)
	for _, name := range []string{"left", "removed"} {
		newTestNode(t, name, net, clk, nil)
	}
	leaderOf(n, "a")
	n.members.set(member("a", membership.Alive, true, ""), member("left", membership.Alive, true, ""),
		member("removed", membership.Alive, true, ""))
	n.leaving.add("id-left")
	n.leaving.add("id-removed")
	n.reconcileMembers()
	if len(n.raft.added) != 0 {
		t.Fatalf("added %v while both were being decommissioned", n.raft.added)
	}
	n.leaving.markGone("id-left") // its own Leave completed
	n.leaving.done("id-left")
	n.leaving.done("id-removed") // the operator's removal completed
	n.reconcileMembers()
	if want := []raft.ServerID{"id-removed"}; !slices.Equal(n.raft.added, want) {
		t.Fatalf("added %v, want %v: a server that left for good stays out", n.raft.added, want)
	}
}
