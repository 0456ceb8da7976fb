package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// nodeNonVoter is the autopilot node type of members without a data dir:
// never promoted.
const nodeNonVoter autopilot.NodeType = "non-voter"

// metaZone is the key of a member's zone in autopilot.Server.Meta.
const metaZone = "zone"

func newAutopilot(cl *Cluster) *autopilot.Autopilot {
	d := &pilotDelegate{cl: cl}
	return autopilot.New(checkedRaft{Raft: cl.o.Raft, probe: cl.probeCandidate}, d,
		autopilot.WithLogger(logbridge.HCLog(cl.log.With("subsystem", "autopilot"), "autopilot", cl.o.Closing)),
		autopilot.WithPromoter(newPromoter(cl)),
		autopilot.WithReconcileInterval(cl.o.ReconcileInterval),
		autopilot.WithUpdateInterval(cl.o.ReconcileInterval),
	)
}

// pilotDelegate is autopilot's view of the application.
type pilotDelegate struct{ cl *Cluster }

// AutopilotConfig is autopilot's configuration, from Options.
func (d *pilotDelegate) AutopilotConfig() *autopilot.Config {
	o := d.cl.o
	return &autopilot.Config{
		CleanupDeadServers:      true,
		LastContactThreshold:    4 * o.HeartbeatTimeout,
		MaxTrailingLogs:         max(o.SnapshotThreshold/4, 64),
		MinQuorum:               uint(o.Voters/2 + 1),
		ServerStabilizationTime: o.ServerStabilization,
	}
}

// NotifyState keeps the leader's judgement of the group (see Health) and
// exports it as metrics. It runs under autopilot's state lock: it must not
// call back into autopilot.
func (d *pilotDelegate) NotifyState(s *autopilot.State) {
	d.cl.noteHealth(reportFromState(s, d.cl.o.Raft.CurrentTerm()))
	d.cl.o.Metrics.health(s.Healthy, s.FailureTolerance)
}

// FetchServerStats asks every server for its raft progress, and hands each
// the group's health as this leader last judged it (see leaderHealth). A
// server that does not answer gets stats that make it unhealthy at once
// (autopilot would otherwise keep its last answer); one that answers
// proves it reaches the leader, whatever gossip says (see failed).
func (d *pilotDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	cl := d.cl
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[raft.ServerID]*autopilot.ServerStats, len(servers))
	req := wire.StatsRequest{Health: cl.leaderHealth()}
	for id, srv := range servers {
		if string(id) == cl.o.ID {
			st := toServerStats(cl.localStats())
			mu.Lock()
			out[id] = st
			mu.Unlock()
			continue
		}
		addr, _, err := transport.SplitRaftAddress(srv.Address)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, cl.o.RPCTimeout)
			defer cancel()
			var rep wire.StatsReply
			st := &autopilot.ServerStats{LastContact: -1} // unreachable: unhealthy now
			if err := cl.o.Caller.Call(ctx, addr, wire.MethodStats, req, &rep); err == nil {
				st = toServerStats(rep)
				cl.o.Heard.NoteHeard(string(id), cl.o.Now())
			}
			mu.Lock()
			out[id] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func toServerStats(s wire.StatsReply) *autopilot.ServerStats {
	lc := time.Duration(s.LastContactNs)
	if s.LastContactNs < 0 {
		lc = -1
	}
	return &autopilot.ServerStats{LastContact: lc, LastTerm: s.LastTerm, LastIndex: s.LastIndex}
}

// KnownServers lists every gossip member of this cluster (or fresh) by raft
// ID. A member reported dead counts as failed only after
// DeadServerStabilization, so a short gossip hiccup removes nobody, and
// only while its keepalives do not reach this leader (see failed). A voter
// that left gossip (a graceful shutdown, which keeps its vote: a restart)
// counts the same way as a dead one; a non-voter that left counts as left,
// and goes at once.
func (d *pilotDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	cl := d.cl
	ours := cl.ClusterID()
	voter := map[raft.ServerID]bool{}
	for _, s := range cl.servers() {
		voter[s.ID] = s.Suffrage == raft.Voter
	}
	out := map[raft.ServerID]*autopilot.Server{}
	for _, m := range cl.members.Members() {
		if m.Meta.NodeID == "" || (m.Meta.ClusterID != "" && m.Meta.ClusterID != ours) {
			continue
		}
		s := &autopilot.Server{
			ID:          raft.ServerID(m.Meta.NodeID),
			Name:        m.Name,
			Address:     transport.RaftAddress(m.Meta.RPCAddr, m.Meta.NodeID),
			NodeStatus:  autopilot.NodeAlive,
			RaftVersion: raft.ProtocolVersionMax,
			IsLeader:    m.Meta.NodeID == cl.o.ID && cl.o.Raft.State() == raft.Leader,
			NodeType:    autopilot.NodeVoter,
			Meta:        map[string]string{metaZone: m.Meta.Zone},
		}
		if !m.Meta.Voter {
			s.NodeType = nodeNonVoter
		}
		switch {
		case m.State == membership.Left && !voter[s.ID]:
			s.NodeStatus = autopilot.NodeLeft
		case m.State == membership.Left || m.State == membership.Failed:
			if d.failed(m) {
				s.NodeStatus = autopilot.NodeFailed
			}
		}
		out[s.ID] = s
	}
	return out
}

// failed reports whether a member gossip reports failed counts as failed
// for autopilot: gossip has said so for DeadServerStabilization, and
// neither a keepalive nor an answer to autopilot's stats request from the
// node reached this leader in that time. A node whose
// gossip alone is cut off (a flapping UDP path, a firewall on the gossip
// port) still reaches the leader over RPC and replicates over raft, so
// removing it from the voters would only stall its replica and cost its
// session.
func (d *pilotDelegate) failed(m membership.Member) bool {
	o := d.cl.o
	now := o.Now()
	if now.Sub(m.Since) < o.DeadServerStabilization {
		return false
	}
	return !o.Heard.HeardWithin(m.Meta.NodeID, o.DeadServerStabilization, now)
}

// RemoveFailedServer removes a failed server from the raft configuration.
// The promoter lets a voter go only once its replacement is a voter.
func (d *pilotDelegate) RemoveFailedServer(s *autopilot.Server) {
	cl := d.cl
	cl.log.Info("removing failed server", "member", s.Name, "id", s.ID)
	remove := func() raft.Future { return cl.o.Raft.RemoveServer(s.ID, 0, cl.o.RPCTimeout) }
	if err := cl.o.Issue(cl.ctx, remove); err != nil {
		cl.log.Warn("removing failed server", "member", s.Name, "error", err)
	}
}
