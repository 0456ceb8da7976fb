package raftnode

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// raftTransport is the transport raft runs on: hashicorp/raft's network
// transport with pipelining turned off (see AppendEntriesPipeline), and the
// leader's idle commit-index repeats and most of its heartbeats to
// non-voters answered from memory.
//
// An idle raft leader sends every follower an AppendEntries without entries
// once per CommitTimeout (10-20 ms with DefaultLocalConfig), on top of its
// heartbeats, so that a follower learns a new commit index soon after a
// commit. With 60 non-voters that is thousands of round trips a second that
// say nothing new. AppendEntries answers such a request from the last
// answer when the follower is a non-voter, the request equals (term,
// previous entry, commit index) the last one the follower accepted, and
// that real exchange is younger than refresh. A changed commit index, new
// entries, heartbeats and everything sent to voters always go out, so no
// follower learns a commit later and the leader's contact with its quorum
// is never assumed. A failed exchange with the follower forgets its answer.
//
// Heartbeats (no entries, no commit index) go to each follower every
// HeartbeatTimeout/10 to /5 (30-60 ms with DefaultLocalConfig), which keeps
// a voter from starting an election. A non-voter never starts one: missing
// heartbeats for a HeartbeatTimeout only makes it forget the leader. So a
// heartbeat to a non-voter is answered from its last heartbeat answer while
// that real exchange, in the same term, is younger than refresh/4: a
// non-voter still hears from the leader every refresh/4 plus one heartbeat
// interval (105-135 ms with DefaultLocalConfig), well within its
// HeartbeatTimeout, and the leader sends a third to a half of the
// heartbeats it did.
// (hashicorp/raft also counts a non-voter's answer toward VerifyLeader;
// holdfast does not rely on VerifyLeader: its confirmation rounds ask the
// voters directly.)
type raftTransport struct {
	*raft.NetworkTransport
	refresh time.Duration
	idle    *idlePark
	voter   atomic.Pointer[func(raft.ServerID) bool] // nil until raft runs: no skipping

	// guard keeps other clusters' raft traffic from raft (guard.go):
	// requests reach raft through rpcs, heartbeats through beat.
	guard *guard
	// writes lowers the commit index sent while the leader's copy is not
	// on disk (leaderwrite.go); nil in tests that build a transport alone.
	writes *leaderWrites
	rpcs   chan raft.RPC
	stop   chan struct{}
	beat   atomic.Pointer[func(raft.RPC)]
	// applied is raft's applied index once raft runs (nil before): a
	// snapshot older than it is refused (oldsnapshot.go).
	applied atomic.Pointer[func() uint64]

	mu    sync.Mutex
	last  map[raft.ServerID]idleAnswer
	beats map[raft.ServerID]idleAnswer // the last real heartbeat answer (only term, resp and at are used)
}

// idleAnswer is a follower's last accepted answer to an empty AppendEntries.
type idleAnswer struct {
	term, prevIndex, prevTerm, commit uint64
	resp                              raft.AppendEntriesResponse
	at                                time.Time
}

func newRaftTransport(t *raft.NetworkTransport, refresh time.Duration, g *guard) *raftTransport {
	rt := &raftTransport{NetworkTransport: t, refresh: refresh, idle: newIdlePark(refresh / 2),
		last: map[raft.ServerID]idleAnswer{}, beats: map[raft.ServerID]idleAnswer{},
		guard: g, rpcs: make(chan raft.RPC), stop: make(chan struct{})}
	t.SetHeartbeatHandler(rt.heartbeat)
	return rt
}

// Consumer returns the channel raft reads its inbound requests from: those
// the guard let through.
func (t *raftTransport) Consumer() <-chan raft.RPC { return t.rpcs }

// SetHeartbeatHandler sets raft's fast path for heartbeats, behind the
// guard.
func (t *raftTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.beat.Store(nil)
		return
	}
	t.beat.Store(&cb)
}

// heartbeat serves a heartbeat the network transport received: refused by
// the guard, or handed to raft's fast path (or, before raft set one, to
// its consumer).
func (t *raftTransport) heartbeat(rpc raft.RPC) {
	if err := t.guard.check(rpc.Command); err != nil {
		rpc.Respond(nil, err)
		return
	}
	if cb := t.beat.Load(); cb != nil {
		(*cb)(rpc)
		return
	}
	select {
	case t.rpcs <- rpc:
	case <-t.stop:
	}
}

// run forwards the network transport's requests to raft through the guard
// until stopRPCs; Start runs it on the node's wait group.
func (t *raftTransport) run() {
	t.guard.forward(t.NetworkTransport.Consumer(), t.rpcs, t.stop, t.refuseOldSnapshot)
}

// stopRPCs ends run, after raft stopped reading.
func (t *raftTransport) stopRPCs() {
	close(t.stop)
	t.guard.stop()
}

// AppendEntriesPipeline reports that pipelining is not supported. With
// hashicorp/raft v1.7.3, a pipeline to a follower that stops answering can
// deadlock raft's Shutdown: the response decoder blocks handing a result to
// a consumer that has already exited, and the sender blocks on the decoder
// forever. Without the pipeline, replication sends one AppendEntries at a
// time per follower, which is ample for holdfast's write rate (sessions and
// grants, never keepalives).
func (*raftTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries sends req to the follower, or answers an idle repeat or a
// heartbeat to a non-voter from memory (see raftTransport).
func (t *raftTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if c := t.writes.clamp(req.LeaderCommitIndex); c < req.LeaderCommitIndex {
		cp := *req // raft's own request is left as it is
		cp.LeaderCommitIndex = c
		req = &cp
	}
	// A heartbeat carries no commit index and no previous entry; a
	// replication round carries a commit index once anything committed.
	idle := len(req.Entries) == 0 && req.LeaderCommitIndex > 0
	beat := len(req.Entries) == 0 && req.LeaderCommitIndex == 0 && req.PrevLogEntry == 0
	if (idle || beat) && t.answer(id, req, resp, beat) {
		if idle {
			t.idle.wait(req)
		}
		return nil
	}
	err := t.NetworkTransport.AppendEntries(id, target, req, resp)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil || !resp.Success || resp.Term != req.Term:
		delete(t.last, id)
		delete(t.beats, id)
	case idle || beat:
		m := t.last
		if beat {
			m = t.beats
		}
		if _, ok := m[id]; !ok {
			t.forgetStaleLocked() // a new follower, or one back after a failure
		}
		m[id] = idleAnswer{term: req.Term, prevIndex: req.PrevLogEntry, prevTerm: req.PrevLogTerm,
			commit: req.LeaderCommitIndex, resp: *resp, at: time.Now()}
	}
	return err
}

// forgetStaleLocked drops the answers too old to use, so that followers
// that left the configuration do not stay in the maps.
func (t *raftTransport) forgetStaleLocked() {
	for _, m := range []map[raft.ServerID]idleAnswer{t.last, t.beats} {
		for id, a := range m {
			if time.Since(a.at) >= t.refresh {
				delete(m, id)
			}
		}
	}
}

// answer copies the follower's last answer into resp if req repeats the
// request it answered (a heartbeat: any heartbeat of the same term), the
// answer is fresh and the follower is a non-voter.
func (t *raftTransport) answer(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, beat bool) bool {
	m, fresh := t.last, t.refresh
	if beat {
		m, fresh = t.beats, t.refresh/4
	}
	t.mu.Lock()
	a, ok := m[id]
	t.mu.Unlock()
	if !ok || a.term != req.Term || a.prevIndex != req.PrevLogEntry || a.prevTerm != req.PrevLogTerm ||
		a.commit != req.LeaderCommitIndex || time.Since(a.at) >= fresh {
		return false
	}
	if voter := t.voter.Load(); voter == nil || (*voter)(id) {
		return false
	}
	*resp = a.resp
	return true
}

// useRaft starts answering idle repeats, asking r's latest configuration
// whether a follower votes (a server missing from it counts as a voter).
func (t *raftTransport) useRaft(r *raft.Raft) {
	var votes voterCache
	voter := func(id raft.ServerID) bool {
		f := r.GetConfiguration()
		if f.Error() != nil {
			return true
		}
		return votes.voter(f.Configuration().Servers, id)
	}
	t.voter.Store(&voter)
	t.guard.useRaft(r)
	state := func() (uint64, uint64) { return r.CommitIndex(), r.LastIndex() }
	t.idle.state.Store(&state)
	applied := r.AppliedIndex
	t.applied.Store(&applied)
}

// voterCache answers whether a server votes in a configuration, and how
// many do, keeping what it found in the last configuration it saw: raft
// stores each new configuration as a new slice, so the same first element
// and length mean the same configuration.
type voterCache struct {
	mu        sync.Mutex
	first     *raft.Server
	n         int
	nonVoters map[raft.ServerID]bool
	voters    int
}

func (c *voterCache) voter(servers []raft.Server, id raft.ServerID) bool {
	if len(servers) == 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked(servers)
	return !c.nonVoters[id]
}

// count returns the number of voters in servers.
func (c *voterCache) count(servers []raft.Server) int {
	if len(servers) == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked(servers)
	return c.voters
}

// refreshLocked reads servers unless it is the configuration last read.
func (c *voterCache) refreshLocked(servers []raft.Server) {
	if c.first == &servers[0] && c.n == len(servers) {
		return
	}
	c.first, c.n, c.voters = &servers[0], len(servers), 0
	c.nonVoters = make(map[raft.ServerID]bool, len(servers))
	for _, s := range servers {
		switch s.Suffrage {
		case raft.Nonvoter:
			c.nonVoters[s.ID] = true
		case raft.Voter:
			c.voters++
		}
	}
}
