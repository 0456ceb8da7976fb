package coordinator

import (
	"cmp"
	"slices"
	"time"

	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
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
	// Wanted is Config.Voters, the number of voters autopilot keeps.
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
	r := c.health.Load()
	if r == nil {
		return GroupHealth{Wanted: c.cfg.Voters}
	}
	g := GroupHealth{Wanted: c.cfg.Voters, Leader: r.rep.Leader, FailureTolerance: r.rep.FailureTolerance, Age: time.Since(r.at)}
	g.Known = g.Age <= 2*c.cfg.ReconcileInterval+c.cfg.RPCTimeout
	for _, v := range r.rep.Voters {
		g.Voters = append(g.Voters, VoterHealth{ID: v.ID, Name: v.Name, Zone: v.Zone, Healthy: v.Healthy, Leader: v.ID == r.rep.Leader})
	}
	return g
}

// statsRequest is autopilot's stats poll, carrying the leader's health
// judgement; healthReport is the wire form of a GroupHealth.
type (
	statsRequest = wire.StatsRequest
	healthReport = wire.HealthReport
	voterReport  = wire.VoterReport
)

// receivedHealth is a healthReport and when this node got it.
type receivedHealth struct {
	rep healthReport
	at  time.Time
}

// reportFromState turns the leader's autopilot state into a report.
func reportFromState(s *autopilot.State, term uint64) *healthReport {
	if s == nil {
		return nil
	}
	r := &healthReport{Term: term, Leader: string(s.Leader), FailureTolerance: s.FailureTolerance}
	for _, id := range s.Voters {
		srv, ok := s.Servers[id]
		if !ok {
			continue
		}
		r.Voters = append(r.Voters, voterReport{ID: string(id), Name: srv.Server.Name,
			Zone: srv.Server.Meta[metaZone], Healthy: srv.Health.Healthy})
	}
	slices.SortFunc(r.Voters, func(a, b voterReport) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return r
}

// leaderHealth is this leader's latest judgement (kept by NotifyState), to
// hand to the servers; nil when it has none in the current term.
func (c *Coordinator) leaderHealth() *healthReport {
	r := c.health.Load()
	if r == nil || r.rep.Leader != c.id || r.rep.Term != c.raft.CurrentTerm() {
		return nil
	}
	rep := r.rep
	return &rep
}

// noteHealth keeps a report from the leader of this node's current term
// (or a later one); a report from a deposed leader is ignored.
func (c *Coordinator) noteHealth(r *healthReport) {
	if r == nil || r.Term < c.raft.CurrentTerm() {
		return
	}
	c.health.Store(&receivedHealth{rep: *r, at: time.Now()})
}

// serveStats answers autopilot's stats poll and keeps the leader's health
// judgement that came with it.
func (c *Coordinator) serveStats(body []byte) ([]byte, error) {
	var req statsRequest
	if err := transport.Decode(body, &req); err == nil {
		c.noteHealth(req.Health)
	}
	return transport.Encode(c.localStats())
}
