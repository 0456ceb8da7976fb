package coordinator

import (
	"time"
)

// GroupHealth is the raft group's health as the leader's autopilot last
// judged it. The leader hands its judgement to every member of the raft
// configuration with autopilot's stats request (every ReconcileInterval),
// so followers and non-voters report the leader's figures, not a guess of
// their own.
type GroupHealth struct {
	// Known is true when this node holds a judgement no older than
	// 2 × ReconcileInterval + RPCTimeout: it leads, or the leader's stats
	// request reached it recently. A node cut off from the leader, or not
	// yet in the raft configuration, reports false (and the last figures it
	// had, if any).
	Known bool
	// Leader is the raft ID of the leader that judged; Age how long ago.
	Leader string
	Age    time.Duration
	// FailureTolerance is how many more voters may fail while a quorum of
	// healthy voters remains (healthy voters − quorum, at least 0).
	FailureTolerance int
	// Voters lists the voters of the configuration, sorted by name then ID.
	Voters []VoterHealth
	// Wanted is Config.Cluster.Voters, the number of voters autopilot keeps.
	Wanted int
}

// VoterHealth is one voter's health in a GroupHealth.
type VoterHealth struct {
	ID   string
	Name string
	Zone string
	// Healthy is autopilot's verdict: alive in gossip (or heard over RPC),
	// in contact with the leader, in its term and not far behind its log.
	Healthy bool
	Leader  bool
}

// Degraded reports whether the group needs attention: no recent judgement,
// an unhealthy voter, or fewer voters than Wanted.
func (g GroupHealth) Degraded() bool {
	if !g.Known || len(g.Voters) < g.Wanted {
		return true
	}
	for _, v := range g.Voters {
		if !v.Healthy {
			return true
		}
	}
	return false
}

// Health returns the group's health as this node last learned it (see
// GroupHealth).
func (c *Coordinator) Health() GroupHealth {
	rep, at, ok := c.cluster.Health()
	if !ok {
		return GroupHealth{Wanted: c.cfg.Cluster.Voters}
	}
	g := GroupHealth{Wanted: c.cfg.Cluster.Voters, Leader: rep.Leader, FailureTolerance: rep.FailureTolerance, Age: time.Since(at)}
	g.Known = g.Age <= 2*c.cfg.Cluster.ReconcileInterval+c.cfg.RPCTimeout
	for _, v := range rep.Voters {
		g.Voters = append(g.Voters, VoterHealth{ID: v.ID, Name: v.Name, Zone: v.Zone, Healthy: v.Healthy, Leader: v.ID == rep.Leader})
	}
	return g
}
