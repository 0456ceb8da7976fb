package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/transport"
)

// MethodStats is autopilot's stats poll, sent by the leader to every
// server of the raft configuration. It is part of the wire protocol.
const MethodStats = "raft.stats"

// statsRequest is autopilot's stats poll; it carries the leader's health
// judgement (nil before the leader has one). Older leaders send an empty
// request, which decodes to a nil Health.
type statsRequest struct {
	Health *HealthReport `msgpack:"health,omitempty"`
}

// statsReply is a server's raft progress.
type statsReply struct {
	LastContactNs int64  `msgpack:"contact"` // -1: never
	LastTerm      uint64 `msgpack:"term"`
	LastIndex     uint64 `msgpack:"index"`
}

// HealthReport is the raft group's health as a leader's autopilot judged
// it, in its wire form.
type HealthReport struct {
	Term             uint64        `msgpack:"term"`
	Leader           string        `msgpack:"leader"` // raft ID of the leader that judged
	FailureTolerance int           `msgpack:"ft"`
	Voters           []VoterReport `msgpack:"voters"` // sorted by name, then ID
}

// VoterReport is one voter's health in a HealthReport.
type VoterReport struct {
	ID      string `msgpack:"id"`
	Name    string `msgpack:"name"`
	Zone    string `msgpack:"zone"`
	Healthy bool   `msgpack:"healthy"`
}

// receivedHealth is a HealthReport and when this node got it.
type receivedHealth struct {
	rep HealthReport
	at  time.Time
}

// Health returns the last health report this node kept (its own as
// leader, or one a leader's stats poll brought) and when it arrived; ok is
// false before any.
func (cl *Cluster) Health() (rep HealthReport, at time.Time, ok bool) {
	r := cl.health.Load()
	if r == nil {
		return HealthReport{}, time.Time{}, false
	}
	return r.rep, r.at, true
}

// reportFromState turns the leader's autopilot state into a report.
func reportFromState(s *autopilot.State, term uint64) *HealthReport {
	if s == nil {
		return nil
	}
	r := &HealthReport{Term: term, Leader: string(s.Leader), FailureTolerance: s.FailureTolerance}
	for _, id := range s.Voters {
		srv, ok := s.Servers[id]
		if !ok {
			continue
		}
		r.Voters = append(r.Voters, VoterReport{ID: string(id), Name: srv.Server.Name,
			Zone: srv.Server.Meta[metaZone], Healthy: srv.Health.Healthy})
	}
	slices.SortFunc(r.Voters, func(a, b VoterReport) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return r
}

// leaderHealth is this leader's latest judgement (kept by NotifyState), to
// hand to the servers; nil when it has none in the current term.
func (cl *Cluster) leaderHealth() *HealthReport {
	r := cl.health.Load()
	if r == nil || r.rep.Leader != cl.o.ID || r.rep.Term != cl.o.Raft.CurrentTerm() {
		return nil
	}
	rep := r.rep
	return &rep
}

// noteHealth keeps a report from the leader of this node's current term
// (or a later one); a report from a deposed leader is ignored.
func (cl *Cluster) noteHealth(r *HealthReport) {
	if r == nil || r.Term < cl.o.Raft.CurrentTerm() {
		return
	}
	cl.health.Store(&receivedHealth{rep: *r, at: cl.o.Now()})
}

// ServeStats answers autopilot's stats poll (MethodStats) and keeps the
// leader's health judgement that came with it.
func (cl *Cluster) ServeStats(body []byte) ([]byte, error) {
	var req statsRequest
	if err := transport.Decode(body, &req); err == nil {
		cl.noteHealth(req.Health)
	}
	return transport.Encode(cl.localStats())
}

// localStats reads this node's raft progress for autopilot.
func (cl *Cluster) localStats() statsReply {
	s := cl.o.Raft.Stats()
	r := statsReply{LastContactNs: -1}
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
