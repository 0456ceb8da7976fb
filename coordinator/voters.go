package coordinator

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// nodeNonVoter is the autopilot node type of members without a data dir:
// never promoted.
const nodeNonVoter autopilot.NodeType = "non-voter"

func newAutopilot(c *Coordinator) *autopilot.Autopilot {
	d := &pilotDelegate{c: c}
	p := &promoter{c: c, staleSince: map[raft.ServerID]time.Time{}}
	return autopilot.New(c.raft, d,
		autopilot.WithLogger(logbridge.HCLog(c.log.With("subsystem", "autopilot"), "autopilot", c.closing)),
		autopilot.WithPromoter(p),
		autopilot.WithReconcileInterval(c.cfg.ReconcileInterval),
		autopilot.WithUpdateInterval(c.cfg.ReconcileInterval),
	)
}

// pilotDelegate is autopilot's view of the application.
type pilotDelegate struct{ c *Coordinator }

func (d *pilotDelegate) AutopilotConfig() *autopilot.Config {
	c := d.c
	return &autopilot.Config{
		CleanupDeadServers:      true,
		LastContactThreshold:    4 * c.cfg.Raft.HeartbeatTimeout,
		MaxTrailingLogs:         max(c.cfg.SnapshotThreshold/4, 64),
		MinQuorum:               uint(c.cfg.Voters/2 + 1),
		ServerStabilizationTime: c.cfg.ServerStabilization,
	}
}

func (d *pilotDelegate) NotifyState(s *autopilot.State) {
	if d.c.metrics != nil {
		d.c.metrics.healthy.Set(boolFloat(s.Healthy))
		d.c.metrics.failureTolerance.Set(float64(s.FailureTolerance))
	}
}

// FetchServerStats asks every live server for its raft progress.
func (d *pilotDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	c := d.c
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[raft.ServerID]*autopilot.ServerStats, len(servers))
	for id, srv := range servers {
		if string(id) == c.id {
			st := toServerStats(c.localStats())
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
			ctx, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
			defer cancel()
			var rep statsReply
			if err := c.trans.Call(ctx, addr, methodStats, struct{}{}, &rep); err != nil {
				return
			}
			mu.Lock()
			out[id] = toServerStats(rep)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func toServerStats(s statsReply) *autopilot.ServerStats {
	lc := time.Duration(s.LastContactNs)
	if s.LastContactNs < 0 {
		lc = -1
	}
	return &autopilot.ServerStats{LastContact: lc, LastTerm: s.LastTerm, LastIndex: s.LastIndex}
}

// KnownServers lists every gossip member of this cluster (or fresh) by raft
// ID. A member reported dead counts as failed only after
// DeadServerStabilization, so a short gossip hiccup removes nobody, and
// only while its keepalives do not reach this leader (see failed).
func (d *pilotDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	c := d.c
	ours := c.ClusterID()
	out := map[raft.ServerID]*autopilot.Server{}
	for _, m := range c.members.Members() {
		if m.Meta.NodeID == "" || (m.Meta.ClusterID != "" && m.Meta.ClusterID != ours) {
			continue
		}
		s := &autopilot.Server{
			ID:          raft.ServerID(m.Meta.NodeID),
			Name:        m.Name,
			Address:     transport.RaftAddress(m.Meta.RPCAddr, m.Meta.NodeID),
			NodeStatus:  autopilot.NodeAlive,
			RaftVersion: raft.ProtocolVersionMax,
			IsLeader:    m.Meta.NodeID == c.id && c.raft.State() == raft.Leader,
			NodeType:    autopilot.NodeVoter,
		}
		if !m.Meta.Voter {
			s.NodeType = nodeNonVoter
		}
		switch m.State {
		case membership.Left:
			s.NodeStatus = autopilot.NodeLeft
		case membership.Failed:
			if d.failed(m) {
				s.NodeStatus = autopilot.NodeFailed
			}
		}
		out[s.ID] = s
	}
	return out
}

// failed reports whether a member gossip reports failed counts as failed
// for autopilot: gossip has said so for DeadServerStabilization, and no
// keepalive of the node reached this leader in that time. A node whose
// gossip alone is cut off (a flapping UDP path, a firewall on the gossip
// port) still reaches the leader over RPC and replicates over raft, so
// removing it from the voters would only stall its replica and cost its
// session.
func (d *pilotDelegate) failed(m membership.Member) bool {
	c := d.c
	now := time.Now()
	if now.Sub(m.Since) < c.cfg.DeadServerStabilization {
		return false
	}
	return !c.lessor.heardWithin(m.Meta.NodeID, c.cfg.DeadServerStabilization, now)
}

// RemoveFailedServer removes a failed server from the raft configuration.
// The promoter has already limited removals to one voter at a time.
func (d *pilotDelegate) RemoveFailedServer(s *autopilot.Server) {
	c := d.c
	c.log.Info("removing failed server", "member", s.Name, "id", s.ID)
	remove := func() raft.IndexFuture { return c.raft.RemoveServer(s.ID, 0, c.cfg.RPCTimeout) }
	if _, err := issue(c.ctx, &c.futs, remove); err != nil {
		c.log.Warn("removing failed server", "member", s.Name, "error", err)
	}
}

// promoter keeps exactly Config.Voters voters, chosen among healthy,
// stable, voter-eligible members, and changes one voter at a time.
type promoter struct {
	c          *Coordinator
	mu         sync.Mutex
	staleSince map[raft.ServerID]time.Time
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

// CalculatePromotionsAndDemotions promotes one eligible stable non-voter
// while voters are below target, or demotes one (unhealthy first) above it.
func (p *promoter) CalculatePromotionsAndDemotions(c *autopilot.Config, s *autopilot.State) autopilot.RaftChanges {
	want := p.c.cfg.Voters
	var voters, candidates []*autopilot.ServerState
	for _, srv := range s.Servers {
		switch {
		case srv.HasVotingRights():
			voters = append(voters, srv)
		case srv.State == autopilot.RaftNonVoter && srv.Server.NodeType == autopilot.NodeVoter &&
			srv.Health.IsStable(time.Now(), c.ServerStabilizationTime):
			candidates = append(candidates, srv)
		}
	}
	var ch autopilot.RaftChanges
	switch {
	case len(voters) < want && len(candidates) > 0:
		sort.Slice(candidates, func(i, j int) bool {
			a, b := candidates[i].Health.StableSince, candidates[j].Health.StableSince
			if !a.Equal(b) {
				return a.Before(b)
			}
			return candidates[i].Server.ID < candidates[j].Server.ID
		})
		ch.Promotions = []raft.ServerID{candidates[0].Server.ID}
	case len(voters) > want:
		sort.Slice(voters, func(i, j int) bool {
			if voters[i].Health.Healthy != voters[j].Health.Healthy {
				return !voters[i].Health.Healthy
			}
			return voters[i].Server.ID > voters[j].Server.ID
		})
		for _, v := range voters {
			if v.State != autopilot.RaftLeader {
				ch.Demotions = []raft.ServerID{v.Server.ID}
				break
			}
		}
	}
	return ch
}

// FilterFailedServerRemovals lets at most one voter go per round, and only
// when the voters left keep a healthy quorum. A voter that gossip does not
// know (stale) is removed only when another identity now holds its address
// (the node came back with an empty data dir) or after it has been unknown
// for DeadServerStabilization.
func (p *promoter) FilterFailedServerRemovals(_ *autopilot.Config, s *autopilot.State, f *autopilot.FailedServers) *autopilot.FailedServers {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &autopilot.FailedServers{StaleNonVoters: f.StaleNonVoters, FailedNonVoters: f.FailedNonVoters}
	voters, healthy := 0, 0
	for _, srv := range s.Servers {
		if srv.HasVotingRights() {
			voters++
			if srv.Health.Healthy {
				healthy++
			}
		}
	}
	if healthy < (voters-1)/2+1 {
		return out // removing a voter now could lose quorum
	}
	now := time.Now()
	stale := map[raft.ServerID]bool{}
	for _, id := range f.StaleVoters {
		stale[id] = true
		if _, ok := p.staleSince[id]; !ok {
			p.staleSince[id] = now
		}
		if p.replaced(id, s) || now.Sub(p.staleSince[id]) >= p.c.cfg.DeadServerStabilization {
			out.StaleVoters = []raft.ServerID{id}
			return out
		}
	}
	for id := range p.staleSince {
		if !stale[id] {
			delete(p.staleSince, id)
		}
	}
	if len(f.FailedVoters) > 0 {
		out.FailedVoters = f.FailedVoters[:1]
	}
	return out
}

// replaced reports whether the stale voter id's raft address is now held by
// a live member with another identity.
func (p *promoter) replaced(id raft.ServerID, s *autopilot.State) bool {
	var addr string
	for _, srv := range p.c.raftServers() {
		if srv.ID == id {
			addr, _, _ = transport.SplitRaftAddress(srv.Address)
		}
	}
	if addr == "" {
		return false
	}
	for _, m := range p.c.members.Members() {
		if m.State == membership.Alive && m.Meta.RPCAddr == addr && m.Meta.NodeID != string(id) {
			return true
		}
	}
	return false
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
