package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// freshGroup builds nodes named names on one fake network, each seeing
// all of them in gossip as fresh voter-eligible members.
func freshGroup(t *testing.T, clk *testkit.Clock, net *fakeNet, names ...string) map[string]*testNode {
	t.Helper()
	var ms []membership.Member
	for _, n := range names {
		ms = append(ms, member(n, membership.Alive, true, ""))
	}
	nodes := map[string]*testNode{}
	for _, n := range names {
		nodes[n] = newTestNode(t, n, net, clk, nil)
		nodes[n].members.set(ms...)
	}
	return nodes
}

// runProposal makes node name propose if it is the proposer.
func runProposal(n *testNode) (proposed bool, err error) {
	set := n.boot.proposalSet()
	if set == nil {
		return false, nil
	}
	return true, n.boot.propose(set)
}

// TestBootstrapFormsExactlyOnce: with BootstrapExpect fresh nodes, only
// the smallest name proposes; once every member promised, all of them
// bootstrap raft with the identical configuration, once; a second round
// finds them formed and bootstraps nobody again.
func TestBootstrapFormsExactlyOnce(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "c", "a", "b", "d") // d is beyond BootstrapExpect
	for _, name := range []string{"b", "c", "d"} {
		if proposed, _ := runProposal(nodes[name]); proposed {
			t.Fatalf("%s proposed: only the smallest name of the first BootstrapExpect may", name)
		}
	}
	if proposed, err := runProposal(nodes["a"]); !proposed || err != nil {
		t.Fatalf("a: proposed %v, error %v; want a successful proposal", proposed, err)
	}
	want := []raft.ServerID{"id-a", "id-b", "id-c"}
	var first raft.Configuration
	for _, name := range []string{"a", "b", "c"} {
		bs := nodes[name].raft.bootstrapped
		if len(bs) != 1 {
			t.Fatalf("%s bootstrapped %d times, want once", name, len(bs))
		}
		var ids []raft.ServerID
		for _, s := range bs[0].Servers {
			if s.Suffrage != raft.Voter {
				t.Errorf("%s: %s is not a voter", name, s.ID)
			}
			ids = append(ids, s.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s bootstrapped with %v, want %v", name, ids, want)
		}
		if name == "a" {
			first = bs[0]
		} else if !slices.Equal(bs[0].Servers, first.Servers) {
			t.Errorf("%s's configuration %v differs from a's %v", name, bs[0].Servers, first.Servers)
		}
	}
	if len(nodes["d"].raft.bootstrapped) != 0 {
		t.Error("d, outside the proposed set, bootstrapped")
	}
	// A second round: every member has raft state now.
	for _, name := range []string{"a", "b", "c"} {
		if reason := nodes[name].boot.ineligible(); reason == "" {
			t.Errorf("%s still eligible to bootstrap after forming", name)
		}
	}
	if _, err := runProposal(nodes["a"]); err == nil {
		t.Error("a proposed again after forming")
	}
	for _, name := range []string{"a", "b", "c"} {
		if n := len(nodes[name].raft.bootstrapped); n != 1 {
			t.Errorf("%s bootstrapped %d times after a second round, want once", name, n)
		}
	}
}

// TestBootstrapRefusalAborts: a member that promised another proposal
// refuses; the proposer bootstraps nobody and releases the promises it
// got, so those members can promise the next proposal; once the other
// promise lapses (BootstrapPromiseTTL), the proposal succeeds.
func TestBootstrapRefusalAborts(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "a", "b", "c")
	other := wire.BootProposal{ID: "other", By: "z", Servers: []wire.BootServer{{Name: "c", ID: "id-c", Addr: addrOf("c")}}}
	if reason := nodes["c"].boot.promise(other); reason != "" {
		t.Fatalf("c refused the first proposal: %s", reason)
	}
	_, err := runProposal(nodes["a"])
	if err == nil || !strings.Contains(err.Error(), "promised to proposal other") {
		t.Fatalf("proposal against a promised member: %v, want c's refusal", err)
	}
	for name, n := range nodes {
		if len(n.raft.bootstrapped) != 0 {
			t.Errorf("%s bootstrapped although c refused", name)
		}
	}
	if !slices.Contains(net.calls, wire.MethodBootstrapAbort+"@"+addrOf("b")) {
		t.Errorf("b's promise not released: calls %v", net.calls)
	}
	if got := nodes["b"].boot.promised; got != "" {
		t.Errorf("b still promised to %q after the abort", got)
	}
	// The other promise lapses; a's next proposal forms the cluster.
	clk.Advance(nodes["c"].o.BootstrapPromiseTTL)
	if _, err := runProposal(nodes["a"]); err != nil {
		t.Fatalf("after the promise lapsed: %v", err)
	}
	for name, n := range nodes {
		if len(n.raft.bootstrapped) != 1 {
			t.Errorf("%s bootstrapped %d times, want once", name, len(n.raft.bootstrapped))
		}
	}
}

// TestBootstrapCommitNeedsPromise: a commit for a proposal this node did
// not promise (or has released) is refused and bootstraps nothing; a
// prepare naming this node with another identity is refused.
func TestBootstrapCommitNeedsPromise(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "a", "b", "c")
	p := wire.BootProposal{ID: "p1", By: "a", Servers: []wire.BootServer{
		{Name: "a", ID: "id-a", Addr: addrOf("a")}, {Name: "b", ID: "id-b", Addr: addrOf("b")}}}
	var rep wire.BootReply
	if err := net.Call(t.Context(), addrOf("b"), wire.MethodBootstrapCommit, p, &rep); err != nil || rep.OK {
		t.Fatalf("commit without a promise: %+v, %v; want refused", rep, err)
	}
	if err := net.Call(t.Context(), addrOf("b"), wire.MethodBootstrapPrepare, p, &rep); err != nil || !rep.OK {
		t.Fatalf("prepare: %+v, %v; want promised", rep, err)
	}
	if err := net.Call(t.Context(), addrOf("b"), wire.MethodBootstrapAbort, p, &rep); err != nil {
		t.Fatal(err)
	}
	if err := net.Call(t.Context(), addrOf("b"), wire.MethodBootstrapCommit, p, &rep); err != nil || rep.OK {
		t.Fatalf("commit after the abort: %+v, %v; want refused", rep, err)
	}
	if len(nodes["b"].raft.bootstrapped) != 0 {
		t.Fatal("b bootstrapped without a promise")
	}
	impostor := wire.BootProposal{ID: "p2", By: "a", Servers: []wire.BootServer{{Name: "b", ID: "id-someone-else", Addr: addrOf("b")}}}
	if err := net.Call(t.Context(), addrOf("b"), wire.MethodBootstrapPrepare, impostor, &rep); err != nil || rep.OK {
		t.Errorf("prepare naming b with another identity: %+v, %v; want refused", rep, err)
	}
}

// TestBootstrapLatePromisesAbort: promises that took more than half of
// BootstrapPromiseTTL to gather may have lapsed at a member; the proposer
// aborts rather than bootstrap.
func TestBootstrapLatePromisesAbort(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "a", "b", "c")
	net.onCall = func(_, method string) {
		if method == wire.MethodBootstrapPrepare {
			clk.Advance(nodes["a"].o.BootstrapPromiseTTL / 3) // two prepares: 2/3 of the TTL
		}
	}
	if _, err := runProposal(nodes["a"]); err == nil || !strings.Contains(err.Error(), "too late") {
		t.Fatalf("slow promises: %v, want an abort", err)
	}
	for name, n := range nodes {
		if len(n.raft.bootstrapped) != 0 {
			t.Errorf("%s bootstrapped on late promises", name)
		}
		if n.boot.promised != "" {
			t.Errorf("%s still promised after the abort", name)
		}
	}
}

// TestBootstrapNotWhenClusterSeen: a fresh node that sees a formed cluster
// in gossip joins it instead of bootstrapping.
func TestBootstrapNotWhenClusterSeen(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "a", "b", "c")
	ms := nodes["a"].members.Members()
	nodes["a"].members.set(append(ms, member("x", membership.Alive, true, "formed"))...)
	if reason := nodes["a"].boot.ineligible(); !strings.Contains(reason, "sees cluster formed") {
		t.Errorf("a sees a formed cluster: ineligible %q", reason)
	}
	if !strings.Contains(nodes["a"].Formation().Progress, "joining cluster formed") {
		t.Errorf("formation progress: %q", nodes["a"].Formation().Progress)
	}
}

// TestBootstrapRecordsClusterID: the proposal carries the new cluster's
// ID; every node of the set records it when it bootstraps, gossips it from
// then on, and the first leader's InitCluster uses it. A node outside the
// set records nothing.
func TestBootstrapRecordsClusterID(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	nodes := freshGroup(t, clk, net, "a", "b", "c", "d")
	if proposed, err := runProposal(nodes["a"]); !proposed || err != nil {
		t.Fatalf("proposed %v, %v", proposed, err)
	}
	id := nodes["a"].ClusterID()
	if id == "" {
		t.Fatal("the proposer recorded no cluster")
	}
	for _, name := range []string{"a", "b", "c"} {
		n := nodes[name]
		if n.ClusterID() != id || n.LocalMeta().ClusterID != id {
			t.Errorf("%s: recorded %q, gossips %q; want %q", name, n.ClusterID(), n.LocalMeta().ClusterID, id)
		}
		if got := n.members.lastMeta().ClusterID; got != id {
			t.Errorf("%s set gossip meta with cluster %q", name, got)
		}
	}
	if got := nodes["d"].ClusterID(); got != "" {
		t.Errorf("d recorded %q", got)
	}
	var init fsm.InitCluster
	nodes["b"].o.ApplyLocal = func(_ context.Context, b []byte) error {
		c, err := fsm.Decode(b)
		if err == nil {
			init = *c.Init
		}
		return errors.New("stop here")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	nodes["b"].InitCluster(ctx)
	if init.ClusterID != id || init.Created != clk.Time().UnixMicro() {
		t.Errorf("InitCluster %+v; want cluster %s created at %d", init, id, clk.Time().UnixMicro())
	}
}
