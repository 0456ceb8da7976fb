package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// fakeGroup is a raft configuration and autopilot state built by hand for
// the promoter, with a fake clock.
type fakeGroup struct {
	clk     *testkit.Clock
	now     time.Time // when the group was built: StableSince is relative to it
	state   *autopilot.State
	servers []raft.Server
}

const (
	testDead   = 2 * time.Second // DeadServerStabilization
	testStable = time.Second     // ServerStabilization
)

func newFakeGroup() *fakeGroup {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	return &fakeGroup{clk: clk, now: clk.Time(), state: &autopilot.State{Servers: map[raft.ServerID]*autopilot.ServerState{}}}
}

// add puts a server in both the raft configuration and the state. role is
// "leader", "voter" or "nonvoter"; status "alive", "failed" or "left";
// healthy and since say autopilot's verdict and for how long it has held.
func (g *fakeGroup) add(id, role, status, zone string, healthy bool, since time.Duration) *fakeGroup {
	st := &autopilot.ServerState{
		Server: autopilot.Server{ID: raft.ServerID(id), Name: id, NodeType: autopilot.NodeVoter,
			NodeStatus: autopilot.NodeStatus(status), Meta: map[string]string{metaZone: zone}},
		Health: autopilot.ServerHealth{Healthy: healthy, StableSince: g.now.Add(-since)},
	}
	suffrage := raft.Voter
	switch role {
	case "leader":
		st.State = autopilot.RaftLeader
		g.state.Leader = st.Server.ID
	case "voter":
		st.State = autopilot.RaftVoter
	default:
		st.State = autopilot.RaftNonVoter
		suffrage = raft.Nonvoter
	}
	g.state.Servers[st.Server.ID] = st
	g.servers = append(g.servers, raft.Server{ID: st.Server.ID, Suffrage: suffrage})
	return g
}

// setVoter changes id's suffrage in both the raft configuration and the
// state, as one promotion or demotion does once the state has caught up.
func (g *fakeGroup) setVoter(id raft.ServerID, voter bool) {
	st, suffrage := autopilot.RaftNonVoter, raft.Nonvoter
	if voter {
		st, suffrage = autopilot.RaftVoter, raft.Voter
	}
	g.state.Servers[id].State = st
	for i := range g.servers {
		if g.servers[i].ID == id {
			g.servers[i].Suffrage = suffrage
		}
	}
}

func (g *fakeGroup) promoter(voters int) *promoter {
	return &promoter{voters: voters, dead: testDead, now: g.clk.Time,
		servers: func() []raft.Server { return g.servers }}
}

func (g *fakeGroup) changes(voters int) string {
	ch := g.promoter(voters).CalculatePromotionsAndDemotions(&autopilot.Config{ServerStabilizationTime: testStable}, g.state)
	return fmt.Sprintf("promote %v demote %v", ch.Promotions, ch.Demotions)
}

// removals runs the failed-server filter over every failed voter (gossip
// status failed) and every stale one (status left) of the group.
func (g *fakeGroup) removals(voters int) []raft.ServerID {
	f := &autopilot.FailedServers{}
	for _, s := range g.servers {
		st := g.state.Servers[s.ID]
		if s.Suffrage != raft.Voter {
			continue
		}
		switch st.Server.NodeStatus {
		case autopilot.NodeFailed:
			f.FailedVoters = append(f.FailedVoters, &st.Server)
		case autopilot.NodeLeft:
			f.StaleVoters = append(f.StaleVoters, s.ID)
		}
	}
	out := g.promoter(voters).FilterFailedServerRemovals(&autopilot.Config{}, g.state, f)
	ids := slices.Clone(out.StaleVoters)
	for _, s := range out.FailedVoters {
		ids = append(ids, s.ID)
	}
	return ids
}

const long = time.Hour // healthy (or not) for long enough to count

// TestPromoterKeepsFailedVoterWithoutReplacement is the rule that keeps a
// 3- or 5-voter group from shrinking on a failure: with no eligible
// replacement, failed voters keep their vote, however many failed.
func TestPromoterKeepsFailedVoterWithoutReplacement(t *testing.T) {
	for _, tc := range []struct {
		voters, failed int
	}{{3, 1}, {5, 1}, {5, 2}} {
		g := newFakeGroup().add("a", "leader", "alive", "", true, long)
		for i := 1; i < tc.voters; i++ {
			status := "alive"
			if i <= tc.failed {
				status = "failed"
			}
			g.add(fmt.Sprintf("v%d", i), "voter", status, "", status == "alive", long)
		}
		if got := g.changes(tc.voters); got != "promote [] demote []" {
			t.Errorf("%d voters, %d failed: %s, want no change", tc.voters, tc.failed, got)
		}
		if got := g.removals(tc.voters); len(got) != 0 {
			t.Errorf("%d voters, %d failed: removes %v with no replacement", tc.voters, tc.failed, got)
		}
	}
}

// TestPromoterPromotesThenRemoves walks a failure through: the replacement
// is promoted first, and only then is the failed voter demoted or removed,
// one voter beyond Voters at a time.
func TestPromoterPromotesThenRemoves(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "failed", "", false, long).
		add("d", "nonvoter", "alive", "", true, long).
		add("e", "nonvoter", "alive", "", true, testStable/2) // not yet stable
	if got := g.changes(3); got != "promote [d] demote []" {
		t.Fatalf("one failed voter, one stable candidate: %s", got)
	}
	// d promoted: four voters, and the failed one may go now.
	g = newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "failed", "", false, long).
		add("d", "voter", "alive", "", true, long)
	if got := g.changes(3); got != "promote [] demote [c]" {
		t.Errorf("replacement promoted: %s, want the failed voter demoted", got)
	}
	if got := g.removals(3); !slices.Equal(got, []raft.ServerID{"c"}) {
		t.Errorf("replacement promoted: removals %v, want [c]", got)
	}
}

// TestPromoterFiveVotersTwoFailed: two replacements come one at a time and
// each failed voter goes only after one replacement stands for it.
func TestPromoterFiveVotersTwoFailed(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "alive", "", true, long).
		add("d", "voter", "failed", "", false, long).
		add("e", "voter", "failed", "", false, long).
		add("f", "nonvoter", "alive", "", true, long).
		add("g", "nonvoter", "alive", "", true, long)
	if got := g.changes(5); got != "promote [f] demote []" {
		t.Fatalf("two failed: %s", got)
	}
	g.setVoter("f", true)
	g.servers[5].Suffrage = raft.Voter
	if got := g.changes(5); got != "promote [] demote [d]" {
		t.Errorf("six voters, two failed: %s", got)
	}
	if got := g.removals(5); !slices.Equal(got, []raft.ServerID{"d"}) {
		t.Errorf("six voters, two failed: removals %v, want only [d]", got)
	}
}

// TestPromoterStaleVoterReplacedFirst is the wiped data dir: the old
// identity is gone from gossip (stale, reported left), the new identity is
// a stable non-voter; it is promoted before the old one is removed.
func TestPromoterStaleVoterReplacedFirst(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("old", "voter", "left", "", false, time.Second).
		add("new", "nonvoter", "alive", "", true, long)
	if got := g.removals(3); len(got) != 0 {
		t.Errorf("stale voter removed before its replacement: %v", got)
	}
	if got := g.changes(3); got != "promote [new] demote []" {
		t.Fatalf("stale voter: %s", got)
	}
	g.setVoter("new", true)
	g.servers[3].Suffrage = raft.Voter
	if got := g.removals(3); !slices.Equal(got, []raft.ServerID{"old"}) {
		t.Errorf("after the promotion: removals %v, want [old]", got)
	}
}

// TestPromoterUnhealthyVoterWaits: a voter autopilot finds unhealthy
// (stats unanswered) counts as down only after DeadServerStabilization.
func TestPromoterUnhealthyVoterWaits(t *testing.T) {
	for _, tc := range []struct {
		for_ time.Duration
		want string
	}{{testDead / 2, "promote [] demote []"}, {testDead, "promote [d] demote []"}} {
		g := newFakeGroup().add("a", "leader", "alive", "", true, long).
			add("b", "voter", "alive", "", true, long).
			add("c", "voter", "alive", "", false, tc.for_).
			add("d", "nonvoter", "alive", "", true, long)
		if got := g.changes(3); got != tc.want {
			t.Errorf("unhealthy for %v: %s, want %s", tc.for_, got, tc.want)
		}
	}
}

// TestPromoterNeverDemotesLeader: with one voter too many, all healthy,
// the highest non-leader ID goes.
func TestPromoterNeverDemotesLeader(t *testing.T) {
	g := newFakeGroup().add("z", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "alive", "", true, long).
		add("d", "voter", "alive", "", true, long)
	if got := g.changes(3); got != "promote [] demote [d]" {
		t.Errorf("four healthy voters: %s", got)
	}
}

// TestPromoterDemotesTheLaggingVoter: with one voter too many (a voter came
// back after its replacement was promoted), the one whose log ends earliest
// goes, not the highest ID: an up-to-date voter keeps its vote
// (simulation seed 34521: the demoted up-to-date voter left a lagging one,
// with a configuration that did not know the replacement as a voter, and
// no election could succeed once the leader was lost).
func TestPromoterDemotesTheLaggingVoter(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("z", "voter", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "alive", "", true, long)
	for id, last := range map[raft.ServerID]uint64{"a": 68, "z": 68, "b": 52, "c": 68} {
		g.state.Servers[id].Stats.LastIndex = last
	}
	if got := g.changes(3); got != "promote [] demote [b]" {
		t.Errorf("voter b's log ends at 52, the others' at 68: %s", got)
	}
	g.state.Servers["b"].Stats.LastIndex = 68
	if got := g.changes(3); got != "promote [] demote [z]" {
		t.Errorf("every log ends at 68: %s, want the highest ID demoted", got)
	}
}

// TestPromoterZones: voters go to zones no voter holds, and a doubled zone
// is undone by promoting into a free zone, then demoting a doubled voter.
func TestPromoterZones(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "z1", true, long).
		add("b", "voter", "alive", "z2", true, long).
		add("c", "voter", "failed", "z3", false, long).
		add("d", "nonvoter", "alive", "z1", true, 2*long). // stable longer, same zone as a
		add("e", "nonvoter", "alive", "z3", true, long)
	if got := g.changes(3); got != "promote [e] demote []" {
		t.Errorf("replacement: %s, want the candidate of the free zone", got)
	}
	g = newFakeGroup().add("a", "leader", "alive", "z1", true, long).
		add("b", "voter", "alive", "z1", true, long).
		add("c", "voter", "alive", "z2", true, long).
		add("d", "nonvoter", "alive", "z3", true, long).
		add("e", "nonvoter", "alive", "z2", true, long)
	if got := g.changes(3); got != "promote [d] demote []" {
		t.Errorf("doubled zone: %s, want a swap begun by promoting the z3 candidate", got)
	}
	g.setVoter("d", true)
	if got := g.changes(3); got != "promote [] demote [b]" {
		t.Errorf("four voters over three zones: %s, want the doubled non-leader demoted", got)
	}
	g = newFakeGroup().add("a", "leader", "alive", "z1", true, long).
		add("b", "voter", "alive", "z1", true, long).
		add("c", "voter", "alive", "z2", true, long).
		add("e", "nonvoter", "alive", "z2", true, long)
	if got := g.changes(3); got != "promote [] demote []" {
		t.Errorf("no free zone to move to: %s, want no change", got)
	}
}

// TestPromoterWaitsForStabilisation: a joining node is promoted only once
// it has been healthy for ServerStabilization, even while the group is
// short of voters; a healthy voter is then never demoted to make room.
func TestPromoterWaitsForStabilisation(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "nonvoter", "alive", "", true, 0) // just joined
	if got := g.changes(3); got != "promote [] demote []" {
		t.Fatalf("just joined: %s, want no promotion before stabilisation", got)
	}
	g.clk.Advance(testStable / 2)
	if got := g.changes(3); got != "promote [] demote []" {
		t.Fatalf("half stabilised: %s, want no promotion", got)
	}
	g.clk.Advance(testStable / 2)
	if got := g.changes(3); got != "promote [c] demote []" {
		t.Fatalf("stable for ServerStabilization: %s, want c promoted", got)
	}
	// A node that failed while joining is not promoted however long it has
	// been known.
	g = newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("c", "nonvoter", "failed", "", true, long)
	if got := g.changes(3); got != "promote [] demote []" {
		t.Errorf("failed candidate: %s, want no promotion", got)
	}
}

// TestReplacementNeverDropsBelowVoters plays autopilot's rounds over a
// group of three voters where one fails and two non-voters can replace it:
// each round applies the promoter's changes and the removals it lets
// through. The voters never fall below three, the failed voter is gone at
// the end, and exactly one replacement was promoted.
func TestReplacementNeverDropsBelowVoters(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "failed", "", false, long).
		add("d", "nonvoter", "alive", "", true, long).
		add("e", "nonvoter", "alive", "", true, long)
	voters := func() (n int, ids []raft.ServerID) {
		for _, s := range g.servers {
			if s.Suffrage == raft.Voter {
				n++
				ids = append(ids, s.ID)
			}
		}
		return n, ids
	}
	setVoter := func(id raft.ServerID, voter bool) {
		for i, s := range g.servers {
			if s.ID == id {
				g.servers[i].Suffrage, g.state.Servers[id].State = raft.Nonvoter, autopilot.RaftNonVoter
				if voter {
					g.servers[i].Suffrage, g.state.Servers[id].State = raft.Voter, autopilot.RaftVoter
				}
			}
		}
	}
	for round := 0; round < 6; round++ {
		// Removals run first in autopilot's round, against the live
		// configuration.
		for _, id := range g.removals(3) {
			g.servers = slices.DeleteFunc(g.servers, func(s raft.Server) bool { return s.ID == id })
			delete(g.state.Servers, id)
		}
		if n, ids := voters(); n < 3 {
			t.Fatalf("round %d: voters %v, fewer than 3", round, ids)
		}
		ch := g.promoter(3).CalculatePromotionsAndDemotions(&autopilot.Config{ServerStabilizationTime: testStable}, g.state)
		for _, id := range ch.Promotions {
			setVoter(id, true)
		}
		for _, id := range ch.Demotions {
			setVoter(id, false)
		}
		if n, ids := voters(); n < 3 {
			t.Fatalf("round %d: voters %v after %+v, fewer than 3", round, ids, ch)
		}
	}
	_, ids := voters()
	if slices.Contains(ids, "c") || len(ids) != 3 || !slices.Contains(ids, "d") {
		t.Errorf("at rest: voters %v, want [a b d] (the failed voter replaced by the first candidate)", ids)
	}
}

// TestPromoterReadsSuffrageFromTheConfiguration: autopilot's state can lag
// the raft configuration by a change. A round after a demotion, with the
// state still showing four voters but the configuration three, nothing is
// demoted (simulation seed 507: a second demotion left two voters, one of
// which then died); and a server just promoted is not promoted again.
func TestPromoterReadsSuffrageFromTheConfiguration(t *testing.T) {
	g := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "alive", "", true, long).
		add("c", "voter", "alive", "", true, long).
		add("d", "voter", "alive", "", true, long)
	g.servers[3].Suffrage = raft.Nonvoter // d demoted; the state has not caught up
	if got := g.changes(3); got != "promote [] demote []" {
		t.Errorf("three voters in the configuration, four in the state: %s", got)
	}
	h := newFakeGroup().add("a", "leader", "alive", "", true, long).
		add("b", "voter", "failed", "", false, long).
		add("c", "voter", "alive", "", true, long).
		add("d", "nonvoter", "alive", "", true, long)
	if got := h.changes(3); got != "promote [d] demote []" {
		t.Fatalf("a failed voter and a candidate: %s", got)
	}
	h.servers[3].Suffrage = raft.Voter // d promoted; the state has not caught up
	if got := h.changes(3); got != "promote [] demote [b]" {
		t.Errorf("the promotion in the configuration, not yet in the state: %s, want the failed voter demoted", got)
	}
}
