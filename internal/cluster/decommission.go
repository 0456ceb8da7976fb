package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// A decommission takes a node out of the raft configuration for good. A
// graceful shutdown does not: a voter that stops keeps its vote, so that a
// restart (a deploy) costs no fault tolerance beyond the time it is down,
// and a voter that never returns is replaced by the promoter's dead-voter
// rule. Only an explicit Leave removes a voter, and only in this order:
// promote a replacement when the configuration would otherwise hold fewer
// than Voters voters, then remove the leaver, each change conditional on
// the configuration it was planned on.

// leaving counts, on the leader, the decommissions in progress by server
// ID: the promoter counts such a voter as down (so autopilot's own rounds
// promote its replacement and demote it, rather than demote the
// replacement) and never promotes it. It also remembers the servers this
// leader took out for good (gone), which the member reconciler never adds
// back: a node that left is still alive in gossip while it shuts down, and
// was added again as a non-voter in that window, then promoted in place of
// the next voter to leave, a voter about to stop. An operator's removal of
// a peer (Decommission) is not remembered: a peer it removed that is still
// alive is added back, as documented.
type leaving struct {
	mu   sync.Mutex
	ids  map[string]int
	gone map[string]bool
}

// markGone records that server id left the configuration for good.
func (l *leaving) markGone(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone == nil {
		l.gone = map[string]bool{}
	}
	l.gone[id] = true
}

// excluded reports whether the member reconciler must not add server id:
// it is leaving, or it left for good. A node that left comes back only
// with a new identity (its data dir wiped), so an ID never needs to leave
// the set.
func (l *leaving) excluded(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id] > 0 || l.gone[id]
}

func (l *leaving) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[string]int{}
	}
	l.ids[id]++
}

func (l *leaving) done(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids[id]--; l.ids[id] <= 0 {
		delete(l.ids, id)
	}
}

func (l *leaving) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id] > 0
}

// errNoQuorum marks planLeave's quorum refusals (its text is empty: it
// only tags the error), which Decommission re-plans for a while: a new
// leader's first judgement may not yet count the voters healthy.
var errNoQuorum = errors.New("")

// leaveFacts is what planLeave decides from.
type leaveFacts struct {
	servers []raft.Server // the configuration now
	id      string        // the leaver
	voters  int           // Config.Voters
	force   bool
	// healthy reports whether autopilot judges server id healthy.
	healthy func(id raft.ServerID) bool
	// replacement is the non-voter to promote in the leaver's place, or "".
	replacement raft.ServerID
	// pending reports an eligible non-voter alive in gossip that is not yet
	// healthy or stable: a replacement on its way.
	pending bool
}

// leaveStep is planLeave's next change: nothing left to do (gone), promote
// a replacement, remove the leaver, or wait for a replacement to be ready.
type leaveStep struct {
	gone    bool
	promote raft.ServerID
	remove  bool
	wait    bool
}

// planLeave decides the next step of taking f.id out of the configuration,
// or refuses (an error wrapping wire.ErrLeaveRefused): the last voter never
// leaves; a voter whose leaving would drop the voters below Voters leaves
// only once a replacement is promoted (waiting for one that is not yet
// stable), or when forced; and no step is
// taken whose new configuration's healthy voters would not form its
// quorum, forced or not (the change could not commit, and the group would
// stop).
func planLeave(f leaveFacts) (leaveStep, error) {
	var self *raft.Server
	others, healthy := 0, 0
	for i, s := range f.servers {
		switch {
		case string(s.ID) == f.id:
			self = &f.servers[i]
		case s.Suffrage == raft.Voter:
			others++
			if f.healthy(s.ID) {
				healthy++
			}
		}
	}
	switch {
	case self == nil:
		return leaveStep{gone: true}, nil
	case self.Suffrage != raft.Voter:
		return leaveStep{remove: true}, nil
	case others == 0:
		return leaveStep{}, fmt.Errorf("%w: it is the last voter; a cluster cannot lose its last voter (stop it with Shutdown: its data dir keeps the cluster)", wire.ErrLeaveRefused)
	}
	quorum := func(voters, healthy int) error {
		if healthy < voters/2+1 {
			return fmt.Errorf("%w: the voters left behind could not commit the change: %d of %d healthy, a quorum needs %d%w",
				wire.ErrLeaveRefused, healthy, voters, voters/2+1, errNoQuorum)
		}
		return nil
	}
	switch {
	case others >= f.voters:
		return leaveStep{remove: true}, quorum(others, healthy)
	case f.replacement != "":
		return leaveStep{promote: f.replacement}, quorum(others+1, healthy+1)
	case f.force:
		return leaveStep{remove: true}, quorum(others, healthy)
	case f.pending:
		return leaveStep{wait: true}, quorum(others+1, healthy+1)
	}
	return leaveStep{}, fmt.Errorf("%w: %d voters would remain where Cluster.Voters is %d, and no node is ready to replace it "+
		"(a healthy non-voter with a data dir, stable for ServerStabilization); start one and retry, or force the leave",
		wire.ErrLeaveRefused, others, f.voters)
}

// Decommission takes server req.ID out of the raft configuration for good,
// on this node, which must lead (otherwise a *wire.NotLeaderError): it
// promotes a replacement first when one is needed, then removes the
// server, re-planning after each change and whenever the configuration
// changed under it. With req.DryRun it only checks. Refusals wrap
// wire.ErrLeaveRefused; it returns ctx's error if ctx ends first. This is
// the operator's removal of a peer: one that stays alive in gossip is added
// back as a non-voter.
func (cl *Cluster) Decommission(ctx context.Context, req wire.LeaveRequest) (wire.LeaveReply, error) {
	return cl.decommission(ctx, req, false)
}

// decommission is Decommission; forGood (a node's own Leave) also keeps
// the member reconciler from adding the server back while it shuts down.
func (cl *Cluster) decommission(ctx context.Context, req wire.LeaveRequest, forGood bool) (wire.LeaveReply, error) {
	var rep wire.LeaveReply
	if !req.DryRun {
		cl.leaving.add(req.ID)
		defer cl.leaving.done(req.ID)
	}
	// A new leader judges each server after its stats poll: a quorum
	// refusal is trusted once autopilot has had two rounds to judge.
	patient := cl.o.Now().Add(2*cl.o.ReconcileInterval + cl.o.RPCTimeout)
	for {
		if cl.o.Raft.State() != raft.Leader {
			return rep, cl.notLeader()
		}
		st := cl.judge()
		f := cl.o.Raft.GetConfiguration()
		if st == nil || f.Error() != nil {
			if !pause.For(ctx, 50*time.Millisecond) { // autopilot's first judgement of this term
				return rep, ctx.Err()
			}
			continue
		}
		facts := leaveFacts{servers: f.Configuration().Servers, id: req.ID, voters: cl.o.Voters, force: req.Force,
			healthy: func(id raft.ServerID) bool { s := st.Servers[id]; return s != nil && s.Health.Healthy }}
		facts.replacement, facts.pending = cl.replacement(st, facts.servers, req.ID)
		step, err := planLeave(facts)
		switch {
		case errors.Is(err, errNoQuorum) && cl.o.Now().Before(patient):
			if !pause.For(ctx, 100*time.Millisecond) {
				return rep, err
			}
			continue
		case err != nil:
			return rep, err
		case step.gone:
			rep.Removed = !req.DryRun
			if rep.Removed && forGood {
				cl.leaving.markGone(req.ID) // before done: no reconcile round sees it unmarked
			}
			return rep, nil
		case step.wait:
			// A replacement is becoming stable. A dry run waits too: it
			// answers only once the leave would go ahead or be refused, so
			// that a check passed on a replacement that never becomes ready
			// cannot be followed by a refusal after the node stopped.
			if !pause.For(ctx, 100*time.Millisecond) {
				return rep, fmt.Errorf("no replacement became ready to take the leaving voter's place: %w", ctx.Err())
			}
			continue
		case req.DryRun:
			rep.Promoted = string(step.promote)
			return rep, nil
		}
		if err := cl.applyLeaveStep(ctx, step, req.ID, f.Index(), &rep); err != nil {
			return rep, err
		}
	}
}

// applyLeaveStep makes one change, conditional on the configuration at
// index; a failed change is logged and re-planned (after a short pause),
// unless leadership was lost or ctx ended.
func (cl *Cluster) applyLeaveStep(ctx context.Context, step leaveStep, id string, index uint64, rep *wire.LeaveReply) error {
	var mk func() raft.Future
	if step.promote != "" {
		addr := cl.addressOf(step.promote)
		cl.log.Info("promoting a replacement for a leaving voter", "replacement", step.promote, "leaving", id)
		mk = func() raft.Future { return cl.o.Raft.AddVoter(step.promote, addr, index, cl.o.RPCTimeout) }
	} else {
		cl.log.Info("removing a leaving server from the raft configuration", "id", id)
		mk = func() raft.Future { return cl.o.Raft.RemoveServer(raft.ServerID(id), index, cl.o.RPCTimeout) }
	}
	err := cl.o.Issue(ctx, mk)
	switch {
	case err == nil:
		if step.promote != "" {
			rep.Promoted = string(step.promote)
		}
		return nil
	case errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost):
		return cl.notLeader()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	cl.log.Debug("configuration change for a leave failed; planning again", "error", err)
	if !pause.For(ctx, 50*time.Millisecond) {
		return ctx.Err()
	}
	return nil
}

// replacement picks the non-voter to promote in place of the leaving
// voter id, as the promoter would pick one for a down voter: eligible,
// alive, healthy, stable for ServerStabilization, in a zone no other voter
// holds if possible; "" if there is none. pending reports an eligible,
// alive non-voter that is not ready yet (not healthy or not yet stable),
// or one autopilot has not judged yet.
func (cl *Cluster) replacement(st *autopilot.State, servers []raft.Server, id string) (best raft.ServerID, pending bool) {
	now := cl.o.Now()
	var cands, voters []*autopilot.ServerState
	for _, s := range servers {
		srv := st.Servers[s.ID]
		switch {
		case string(s.ID) == id:
		case srv == nil:
			pending = pending || s.Suffrage != raft.Voter // not judged yet: it will be within a ReconcileInterval
		case s.Suffrage == raft.Voter:
			voters = append(voters, srv)
		case srv.Server.NodeType != autopilot.NodeVoter || srv.Server.NodeStatus != autopilot.NodeAlive || cl.leaving.has(string(s.ID)):
		case srv.Health.Healthy && srv.Health.IsStable(now, cl.o.ServerStabilization):
			cands = append(cands, srv)
		default:
			pending = true
		}
	}
	if b := cl.prom.bestCandidate(cands, cl.prom.zonesHeld(voters, now)); b != nil {
		return b.Server.ID, false
	}
	return "", pending
}

// addressOf is server id's raft address in the configuration ("" if it is
// not there).
func (cl *Cluster) addressOf(id raft.ServerID) raft.ServerAddress {
	for _, s := range cl.servers() {
		if s.ID == id {
			return s.Address
		}
	}
	return ""
}

// notLeader is the refusal of a leader-only request on a follower, naming
// the leader's RPC address when known.
func (cl *Cluster) notLeader() error {
	addr, _, _ := transport.SplitRaftAddress(cl.o.Raft.Leader())
	return &wire.NotLeaderError{Leader: addr}
}

// ServeLeave is the leader's handler of wire.MethodLeave.
func (cl *Cluster) ServeLeave(ctx context.Context, req wire.LeaveRequest) (wire.LeaveReply, error) {
	if req.ID == "" {
		return wire.LeaveReply{}, errors.New("leave: no server ID")
	}
	return cl.decommission(ctx, req, true)
}

// Leave asks the raft leader to take this node out of the configuration
// for good (Decommission), on this node when it leads and over RPC
// otherwise, retrying while no leader is known or it moves, until ctx
// ends. force and dryRun are those of wire.LeaveRequest.
func (cl *Cluster) Leave(ctx context.Context, force, dryRun bool) (wire.LeaveReply, error) {
	req := wire.LeaveRequest{ID: cl.o.ID, Force: force, DryRun: dryRun}
	for {
		var rep wire.LeaveReply
		var err error
		if cl.o.Raft.State() == raft.Leader {
			rep, err = cl.decommission(ctx, req, true)
		} else if addr, _, splitErr := transport.SplitRaftAddress(cl.o.Raft.Leader()); splitErr == nil {
			err = wire.FromRemote(cl.o.Caller.Call(ctx, addr, wire.MethodLeave, req, &rep))
		} else {
			err = wire.ErrNoLeader
		}
		if err == nil || !(errors.Is(err, wire.ErrNotLeader) || errors.Is(err, wire.ErrNoLeader)) {
			return rep, err
		}
		if ctx.Err() != nil || !pause.For(ctx, 50*time.Millisecond) {
			return rep, fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}
