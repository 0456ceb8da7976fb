package raftnode

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// raftTransport is the transport raft runs on: hashicorp/raft's network
// transport with pipelining turned off (see AppendEntriesPipeline) and the
// leader's idle commit-index repeats to non-voters answered from memory.
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
type raftTransport struct {
	*raft.NetworkTransport
	refresh time.Duration
	voter   atomic.Pointer[func(raft.ServerID) bool] // nil until raft runs: no skipping

	mu   sync.Mutex
	last map[raft.ServerID]idleAnswer
}

// idleAnswer is a follower's last accepted answer to an empty AppendEntries.
type idleAnswer struct {
	term, prevIndex, prevTerm, commit uint64
	resp                              raft.AppendEntriesResponse
	at                                time.Time
}

func newRaftTransport(t *raft.NetworkTransport, refresh time.Duration) *raftTransport {
	return &raftTransport{NetworkTransport: t, refresh: refresh, last: map[raft.ServerID]idleAnswer{}}
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

// AppendEntries sends req to the follower, or answers an idle repeat from
// the follower's last answer (see raftTransport).
func (t *raftTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	// A heartbeat carries no commit index; a replication round always does
	// once anything committed.
	idle := len(req.Entries) == 0 && req.LeaderCommitIndex > 0
	if idle && t.answer(id, req, resp) {
		return nil
	}
	err := t.NetworkTransport.AppendEntries(id, target, req, resp)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil || !resp.Success || resp.Term != req.Term:
		delete(t.last, id)
	case idle:
		t.last[id] = idleAnswer{term: req.Term, prevIndex: req.PrevLogEntry, prevTerm: req.PrevLogTerm,
			commit: req.LeaderCommitIndex, resp: *resp, at: time.Now()}
	}
	return err
}

// answer copies the follower's last answer into resp if req repeats the
// request it answered, the follower is a non-voter and the answer is fresh.
func (t *raftTransport) answer(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) bool {
	voter := t.voter.Load()
	if voter == nil || (*voter)(id) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.last[id]
	if !ok || a.term != req.Term || a.prevIndex != req.PrevLogEntry || a.prevTerm != req.PrevLogTerm ||
		a.commit != req.LeaderCommitIndex || time.Since(a.at) >= t.refresh {
		return false
	}
	*resp = a.resp
	return true
}

// useRaft starts answering idle repeats, asking r's latest configuration
// whether a follower votes (a server missing from it counts as a voter).
func (t *raftTransport) useRaft(r *raft.Raft) {
	voter := func(id raft.ServerID) bool {
		f := r.GetConfiguration()
		if f.Error() != nil {
			return true
		}
		for _, s := range f.Configuration().Servers {
			if s.ID == id {
				return s.Suffrage != raft.Nonvoter
			}
		}
		return true
	}
	t.voter.Store(&voter)
}
