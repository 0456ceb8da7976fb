package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/storehealth"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// receivedHealth is a wire.HealthReport and when this node got it.
type receivedHealth struct {
	rep wire.HealthReport
	at  time.Time
}

// Health returns the last health report this node kept (its own as
// leader, or one a leader's stats poll brought) and when it arrived; ok is
// false before any.
func (cl *Cluster) Health() (rep wire.HealthReport, at time.Time, ok bool) {
	r := cl.health.Load()
	if r == nil {
		return wire.HealthReport{}, time.Time{}, false
	}
	return r.rep, r.at, true
}

// GroupHealth is the raft group's health as the leader's autopilot last
// judged it. The leader hands its judgement to every member of the raft
// configuration with autopilot's stats request (every ReconcileInterval),
// so followers and non-voters report the leader's figures, not a guess of
// their own.
type GroupHealth struct {
	// Known is true when this node knows a raft leader and holds a
	// judgement no older than 2 × ReconcileInterval + RPCTimeout: it
	// leads, or the leader's stats request reached it recently. A node
	// that knows no leader (a lost quorum: from the moment raft on this
	// node gives up on its leader), is cut off from the leader, or is not
	// yet in the raft configuration reports false, with the reason in
	// Unknown (and the last figures it had, if any, with their Age).
	Known bool
	// Unknown says why the judgement is not known ("" when Known): "no
	// raft leader known", "no judgement from the raft leader for 25s", or
	// "no judgement received yet".
	Unknown string
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
	// Storage is this node's own raft storage (not the leader's judgement:
	// filled in by the node itself). A failing storage does not make the
	// group Degraded; autopilot then sees the node fall behind.
	Storage storehealth.Health
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

// GroupHealth returns the group's health as this node last learned it (see
// GroupHealth): the last report Health kept, judged against Options.Voters.
func (cl *Cluster) GroupHealth() GroupHealth {
	rep, at, ok := cl.Health()
	leaderKnown := cl.o.Raft.Leader() != ""
	if !ok {
		g := GroupHealth{Wanted: cl.o.Voters, Unknown: "no judgement received yet"}
		if !leaderKnown {
			g.Unknown = "no raft leader known"
		}
		return g
	}
	g := GroupHealth{Wanted: cl.o.Voters, Leader: rep.Leader, FailureTolerance: rep.FailureTolerance, Age: cl.o.Now().Sub(at)}
	fresh := g.Age <= 2*cl.o.ReconcileInterval+cl.o.RPCTimeout
	g.Known = leaderKnown && fresh
	switch {
	case !leaderKnown:
		g.Unknown = "no raft leader known"
	case !fresh:
		g.Unknown = fmt.Sprintf("no judgement from the raft leader for %v", g.Age.Round(time.Second))
	}
	for _, v := range rep.Voters {
		g.Voters = append(g.Voters, VoterHealth{ID: v.ID, Name: v.Name, Zone: v.Zone, Healthy: v.Healthy, Leader: v.ID == rep.Leader})
	}
	return g
}

// reportFromState turns the leader's autopilot state into a report.
func reportFromState(s *autopilot.State, term uint64) *wire.HealthReport {
	if s == nil {
		return nil
	}
	r := &wire.HealthReport{Term: term, Leader: string(s.Leader), FailureTolerance: s.FailureTolerance}
	for _, id := range s.Voters {
		srv, ok := s.Servers[id]
		if !ok {
			continue
		}
		r.Voters = append(r.Voters, wire.VoterReport{ID: string(id), Name: srv.Server.Name,
			Zone: srv.Server.Meta[metaZone], Healthy: srv.Health.Healthy})
	}
	slices.SortFunc(r.Voters, func(a, b wire.VoterReport) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return r
}

// leaderHealth is this leader's latest judgement (kept by NotifyState), to
// hand to the servers; nil when it has none in the current term.
func (cl *Cluster) leaderHealth() *wire.HealthReport {
	r := cl.health.Load()
	if r == nil || r.rep.Leader != cl.o.ID || r.rep.Term != cl.o.Raft.CurrentTerm() {
		return nil
	}
	rep := r.rep
	return &rep
}

// noteHealth keeps a report from the leader of this node's current term
// (or a later one); a report from a deposed leader is ignored.
func (cl *Cluster) noteHealth(r *wire.HealthReport) {
	if r == nil || r.Term < cl.o.Raft.CurrentTerm() {
		return
	}
	cl.health.Store(&receivedHealth{rep: *r, at: cl.o.Now()})
}

// ServeStats answers autopilot's stats poll (wire.MethodStats) and keeps the
// leader's health judgement that came with it.
func (cl *Cluster) ServeStats(body []byte) ([]byte, error) {
	var req wire.StatsRequest
	if err := transport.Decode(body, &req); err == nil {
		cl.noteHealth(req.Health)
	}
	return transport.Encode(cl.localStats())
}

// localStats reads this node's raft progress for autopilot.
func (cl *Cluster) localStats() wire.StatsReply {
	s := cl.o.Raft.Stats()
	r := wire.StatsReply{LastContactNs: -1}
	r.LastTerm, _ = strconv.ParseUint(s["last_log_term"], 10, 64)
	r.LastIndex, _ = strconv.ParseUint(s["last_log_index"], 10, 64)
	switch lc := s["last_contact"]; lc {
	case "never", "":
	case "0":
		r.LastContactNs = 0
	default:
		if d, err := time.ParseDuration(lc); err == nil {
			r.LastContactNs = int64(d)
		}
	}
	if cl.o.Raft.State() == raft.Leader {
		r.LastContactNs = 0
	}
	return r
}
