package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

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
