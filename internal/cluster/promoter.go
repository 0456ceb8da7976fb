package cluster

import (
	"cmp"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// promoter decides autopilot's voter changes. Its rule: the configuration
// never has fewer than Voters voters because of a failure. A voter that is
// down (gossip reports it failed or left, raft no longer knows it to
// gossip, or autopilot has judged it unhealthy for DeadServerStabilization)
// keeps its vote until a healthy, stable, voter-eligible replacement has
// been promoted; only then, with more than Voters voters, is the down voter
// demoted or removed. With no replacement the down voter stays a voter, so
// it votes again the moment it is back. When members carry zones, voters
// are spread over distinct zones as far as the eligible members allow.
//
// It reads only what its fields give it, so tests drive it with fakes.
type promoter struct {
	voters int           // Config.Cluster.Voters
	dead   time.Duration // Config.Cluster.DeadServerStabilization
	now    func() time.Time
	// servers returns the current raft configuration (nil when unknown).
	servers func() []raft.Server
	// leaving reports whether a voter is being decommissioned (Leave): it
	// counts as down and is never a candidate. nil: none is.
	leaving func(id string) bool
}

func newPromoter(cl *Cluster) *promoter {
	return &promoter{
		voters:  cl.o.Voters,
		dead:    cl.o.DeadServerStabilization,
		now:     cl.o.Now,
		servers: cl.servers,
		leaving: cl.leaving.has,
	}
}

func (p *promoter) GetServerExt(*autopilot.Config, *autopilot.ServerState) interface{} { return nil }
func (p *promoter) GetStateExt(*autopilot.Config, *autopilot.State) interface{}        { return nil }

func (p *promoter) GetNodeTypes(_ *autopilot.Config, s *autopilot.State) map[raft.ServerID]autopilot.NodeType {
	out := make(map[raft.ServerID]autopilot.NodeType, len(s.Servers))
	for id, srv := range s.Servers {
		out[id] = srv.Server.NodeType
		if out[id] == "" {
			out[id] = nodeNonVoter // in raft but unknown to gossip: never promote
		}
	}
	return out
}

func (p *promoter) IsPotentialVoter(t autopilot.NodeType) bool { return t == autopilot.NodeVoter }

// isLeaving reports whether server id is being decommissioned.
func (p *promoter) isLeaving(id raft.ServerID) bool { return p.leaving != nil && p.leaving(string(id)) }

// down reports whether a voter counts as lost (or is leaving): gossip (or its absence from
// gossip) says so, or autopilot has found it unhealthy for
// DeadServerStabilization. A voter whose RPCs still reach the leader stays
// healthy whatever gossip says (see pilotDelegate.failed and
// FetchServerStats).
func (p *promoter) down(s *autopilot.ServerState, now time.Time) bool {
	if s.Server.NodeStatus != autopilot.NodeAlive || p.isLeaving(s.Server.ID) {
		return true
	}
	return !s.Health.Healthy && now.Sub(s.Health.StableSince) >= p.dead
}

// CalculatePromotionsAndDemotions makes at most one change per round, in
// this order of precedence:
//  1. more than Voters voters and one is down: demote it (its replacement
//     is already a voter);
//  2. fewer than Voters voters up: promote the best stable candidate;
//  3. more than Voters voters: demote the one whose loss costs least;
//  4. Voters voters up but two share a zone while a stable candidate has a
//     zone no voter holds: promote it (rule 3 then demotes a doubled one).
func (p *promoter) CalculatePromotionsAndDemotions(c *autopilot.Config, s *autopilot.State) autopilot.RaftChanges {
	now := p.now()
	var voters, candidates []*autopilot.ServerState
	up := 0
	cur := p.currentVoters()
	for _, srv := range s.Servers {
		voter := srv.HasVotingRights()
		if cur != nil {
			voter = cur[srv.Server.ID]
		}
		switch {
		case voter:
			voters = append(voters, srv)
			if !p.down(srv, now) {
				up++
			}
		case srv.State == autopilot.RaftNonVoter && srv.Server.NodeType == autopilot.NodeVoter &&
			srv.Server.NodeStatus == autopilot.NodeAlive && srv.Health.IsStable(now, c.ServerStabilizationTime) &&
			!p.isLeaving(srv.Server.ID):
			candidates = append(candidates, srv)
		}
	}
	slices.SortFunc(voters, func(a, b *autopilot.ServerState) int { return cmp.Compare(a.Server.ID, b.Server.ID) })
	var ch autopilot.RaftChanges
	if len(voters) > p.voters {
		for _, v := range voters {
			if p.down(v, now) && v.State != autopilot.RaftLeader {
				ch.Demotions = []raft.ServerID{v.Server.ID}
				return ch
			}
		}
	}
	held := p.zonesHeld(voters, now)
	if up < p.voters && len(candidates) > 0 {
		ch.Promotions = []raft.ServerID{p.bestCandidate(candidates, held).Server.ID}
		return ch
	}
	if len(voters) > p.voters {
		if v := p.leastNeeded(voters, now); v != nil {
			ch.Demotions = []raft.ServerID{v.Server.ID}
		}
		return ch
	}
	if up == p.voters && len(voters) == p.voters && doubledZone(voters) {
		if best := p.bestCandidate(candidates, held); best != nil && zoneOf(best) != "" && !held[zoneOf(best)] {
			ch.Promotions = []raft.ServerID{best.Server.ID}
		}
	}
	return ch
}

// currentVoters is the set of voters of the raft configuration now, or nil
// when it is unknown. Autopilot's state, which the rules read for health,
// is refreshed on its own interval and can lag the configuration by a
// change or two: deciding suffrage from it, a round after a demotion saw
// the demoted voter still voting, counted one voter too many, and demoted
// a second one, leaving two voters of which one then died (simulation
// seed 507). Who votes is therefore read from the configuration.
func (p *promoter) currentVoters() map[raft.ServerID]bool {
	servers := p.servers()
	if servers == nil {
		return nil
	}
	out := make(map[raft.ServerID]bool, len(servers))
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			out[s.ID] = true
		}
	}
	return out
}

// zonesHeld is the set of zones holding a voter that is up.
func (p *promoter) zonesHeld(voters []*autopilot.ServerState, now time.Time) map[string]bool {
	held := map[string]bool{}
	for _, v := range voters {
		if z := zoneOf(v); z != "" && !p.down(v, now) {
			held[z] = true
		}
	}
	return held
}

// doubledZone reports whether two voters share a (non-empty) zone.
func doubledZone(voters []*autopilot.ServerState) bool {
	seen := map[string]bool{}
	for _, v := range voters {
		z := zoneOf(v)
		if z != "" && seen[z] {
			return true
		}
		seen[z] = true
	}
	return false
}

// bestCandidate prefers a candidate in a zone no up voter holds, then the
// one stable the longest, then the lowest ID; nil when there is none.
func (p *promoter) bestCandidate(cands []*autopilot.ServerState, held map[string]bool) *autopilot.ServerState {
	newZone := func(s *autopilot.ServerState) bool { z := zoneOf(s); return z != "" && !held[z] }
	return minBy(cands, func(a, b *autopilot.ServerState) int {
		if na, nb := newZone(a), newZone(b); na != nb {
			if na {
				return -1
			}
			return 1
		}
		return cmp.Or(a.Health.StableSince.Compare(b.Health.StableSince), cmp.Compare(a.Server.ID, b.Server.ID))
	})
}

// leastNeeded picks the voter to demote when there are too many: never the
// leader; an unhealthy one first, then one whose zone another voter also
// holds, then the one whose log ends earliest, then the highest ID. Nil
// when only the leader could go.
//
// The log's end matters when a voter comes back while its replacement is
// already a voter: it may still lack the entries written while it was
// down, the configuration among them. Were an up-to-date voter demoted
// instead and the leader then lost, the voters left would be the one that
// came back, whose configuration does not yet count the replacement as a
// voter, and the replacement; hashicorp/raft refuses a vote to a candidate
// its own configuration does not hold as a voter, and the lagging voter's
// log is too old to win, so no election could ever succeed (simulation
// seed 34521).
func (p *promoter) leastNeeded(voters []*autopilot.ServerState, now time.Time) *autopilot.ServerState {
	zoneCount := map[string]int{}
	for _, v := range voters {
		if z := zoneOf(v); z != "" && !p.down(v, now) {
			zoneCount[z]++
		}
	}
	var rest []*autopilot.ServerState
	for _, v := range voters {
		if v.State != autopilot.RaftLeader {
			rest = append(rest, v)
		}
	}
	score := func(v *autopilot.ServerState) int { // lower: demote first
		switch {
		case !v.Health.Healthy:
			return 0
		case zoneCount[zoneOf(v)] > 1:
			return 1
		}
		return 2
	}
	return minBy(rest, func(a, b *autopilot.ServerState) int {
		return cmp.Or(cmp.Compare(score(a), score(b)), cmp.Compare(a.Stats.LastIndex, b.Stats.LastIndex),
			cmp.Compare(b.Server.ID, a.Server.ID))
	})
}

// zoneOf is the zone a server's gossip metadata names ("" for none).
func zoneOf(s *autopilot.ServerState) string { return s.Server.Meta[metaZone] }

// minBy returns the least element of xs under cmpFn, or nil if xs is empty.
func minBy[T any](xs []*T, cmpFn func(a, b *T) int) *T {
	if len(xs) == 0 {
		return nil
	}
	return slices.MinFunc(xs, cmpFn)
}

// FilterFailedServerRemovals removes voters only beyond Voters: a failed
// or stale voter goes only while the raft configuration holds more voters
// than Voters, that is once its replacement has been promoted, and never
// more than that excess at once. Non-voters pass through.
func (p *promoter) FilterFailedServerRemovals(_ *autopilot.Config, _ *autopilot.State, f *autopilot.FailedServers) *autopilot.FailedServers {
	out := &autopilot.FailedServers{StaleNonVoters: f.StaleNonVoters, FailedNonVoters: f.FailedNonVoters}
	voters := 0
	for _, s := range p.servers() { // the configuration now, not autopilot's last state
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	spare := voters - p.voters
	for _, id := range f.StaleVoters {
		if spare <= 0 {
			return out
		}
		out.StaleVoters = append(out.StaleVoters, id)
		spare--
	}
	for _, srv := range f.FailedVoters {
		if spare <= 0 {
			return out
		}
		out.FailedVoters = append(out.FailedVoters, srv)
		spare--
	}
	return out
}
