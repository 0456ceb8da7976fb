package coordinator

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// WrongTargetConns counts raft connections that reached this node but were
// addressed to another identity (refused).
func (c *Coordinator) WrongTargetConns() uint64 { return c.trans.Stats().WrongTarget }

// SetLessorHooks installs test hooks on the lessor (before it activates).
func (c *Coordinator) SetLessorHooks(onActivate func(time.Time), onKeepAlive func(string, time.Time)) {
	c.lessor.SetTestHooks(onActivate, onKeepAlive)
}

// LessorDeadline returns the leader's deadline for a session.
func (c *Coordinator) LessorDeadline(session string) (time.Time, bool) {
	return c.lessor.Deadline(session)
}

// RaftFuturesInFlight returns how many raft requests this node issued
// (commands, its own and forwarded ones, barriers, configuration changes)
// that raft has not answered yet.
func (c *Coordinator) RaftFuturesInFlight() int { return c.futs.InFlight() }

// SessionID returns the current session's ID ("" if none).
func (c *Coordinator) SessionID() string {
	s, _ := c.currentSession()
	if s == nil {
		return ""
	}
	return s.ID()
}

// SessionValidUntil returns the instant this node's belief in its session
// ends.
func (c *Coordinator) SessionValidUntil() time.Time {
	s, _ := c.currentSession()
	if s == nil {
		return time.Time{}
	}
	return s.ValidUntil()
}

// KeepAliveNow sends one keepalive for the current session at once and
// extends the belief on success, as the keepalive loop does.
func (c *Coordinator) KeepAliveNow() error {
	s, _ := c.currentSession()
	if s == nil {
		return wire.ErrNoSession
	}
	return c.sessions.KeepAliveOnce(s)
}

// Config returns the node's configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// LeaseEndedAt returns when this node ended the lease itself (release,
// loss noticed, shutdown), or the zero time.
func LeaseEndedAt(l *Lease) time.Time { return l.endedAt() }

// Snapshot makes raft take a snapshot now.
func (c *Coordinator) Snapshot() error { return c.node.Raft().Snapshot().Error() }

// LastSnapshotIndex is the index of the latest snapshot this node has
// (taken or installed).
func (c *Coordinator) LastSnapshotIndex() string { return c.node.Raft().Stats()["last_snapshot_index"] }

// ShardLeaseEnd returns when a shard lease's belief ended: the instant this
// node ended it, or its session's deadline if it lapsed with the session.
func ShardLeaseEnd(l *ShardLease) time.Time {
	if t := l.belief.endedAt(); !t.IsZero() {
		return t
	}
	return l.belief.l.Belief().Session().ValidUntil()
}

// ShardLeaseStart returns when this node began to believe the shard lease.
func ShardLeaseStart(l *ShardLease) time.Time { return l.belief.l.Belief().Start() }

// TransportStats returns the transport's counters of refused input.
func (c *Coordinator) TransportStats() transport.Stats { return c.trans.Stats() }

// LeaseWaiters returns the sessions queued for the named lease in the
// local replica, with the requests that queued them.
func (c *Coordinator) LeaseWaiters(name string) []fsm.Waiter {
	l, _ := c.fsm.View().Lease(name)
	return l.Waiters
}

// SetForwardDuplicator makes this node send every lease command it
// forwards to the leader a second time when dup says so, after the delay
// it returns (nil turns it off).
func (c *Coordinator) SetForwardDuplicator(dup func() (time.Duration, bool)) {
	c.node.SetDupForward(dup)
}

// DuplicatesSent counts the duplicated forwards whose call has returned
// (delivered and answered, refused, or timed out).
func (c *Coordinator) DuplicatesSent() int64 { return c.node.DupsSent() }

// Names the black-box tests use that are not exported.
var ErrRejected = wire.ErrRejected

// ForceAddNonvoter adds the node id at rpcAddr to this leader's raft
// configuration as a non-voter without any admission check, as a leader of
// an earlier release did with a node that gossiped no cluster ID.
func (c *Coordinator) ForceAddNonvoter(id, rpcAddr string) error {
	return c.node.Raft().AddNonvoter(raft.ServerID(id), transport.RaftAddress(rpcAddr, id), 0, c.cfg.RPCTimeout).Error()
}

// RaftServers lists the raft IDs of this node's raft configuration.
func (c *Coordinator) RaftServers() []string {
	var out []string
	for _, s := range c.node.Servers() {
		out = append(out, string(s.ID))
	}
	return out
}

// RaftVoters lists the raft IDs of the voters of this node's raft
// configuration.
func (c *Coordinator) RaftVoters() []string {
	var out []string
	for _, s := range c.node.Servers() {
		if s.Suffrage == raft.Voter {
			out = append(out, string(s.ID))
		}
	}
	return out
}

// HasSession reports whether this node's replica holds session id.
func (c *Coordinator) HasSession(id string) bool {
	_, ok := c.fsm.View().Session(id)
	return ok
}

// SessionsOfNode returns the IDs of the sessions the local replica shows
// for the node with the given raft ID.
func (c *Coordinator) SessionsOfNode(nodeID string) []string {
	var ids []string
	for _, s := range c.fsm.View().Sessions() {
		if s.NodeID == nodeID {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// PauseLessor installs a hook that the lessor calls at the start of each
// pass of its loop and as each keepalive reaches it (nil: none): a test
// blocks in it to freeze the lessor.
func (c *Coordinator) PauseLessor(hold func()) { c.lessor.SetPauseHook(hold) }

// LessorStalls is how many stalls this node's lessor detected.
func (c *Coordinator) LessorStalls() int {
	n, _ := c.lessor.Stalls()
	return n
}

// WatchSemaphore calls f with the named semaphore's holders in every view
// the local replica publishes (views published faster than f runs may be
// skipped), until ctx ends.
func (c *Coordinator) WatchSemaphore(ctx context.Context, name string, f func(index uint64, holders []fsm.SemHolder)) {
	for {
		v := c.fsm.View()
		s, _ := v.Semaphore(name)
		f(v.Index(), s.Holders)
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		}
	}
}

// SemaphoreWaiters returns the requests queued for the named semaphore in
// the local replica.
func (c *Coordinator) SemaphoreWaiters(name string) []fsm.Waiter {
	s, _ := c.fsm.View().Semaphore(name)
	return s.Waiters
}

// CommitPermitRelease commits the release of p's request without ending
// p's local belief (as a late settlement or another replica's view of it
// would), so the permit's watcher must notice it.
func (c *Coordinator) CommitPermitRelease(ctx context.Context, p *Permit) error {
	_, err := c.commitRetry(ctx, leases.Semaphore.ReleaseCmd(p.Name(), p.g.SessionID(), p.g.Request(), p.Token()))
	return err
}

// SetSettleHook installs h on this node's leases and permits (nil: none):
// it is told of each failed acquire's settlement (see leases.SettleHook).
func (c *Coordinator) SetSettleHook(h func(ctx context.Context, name string, req uint64) (done func(committed bool))) {
	c.leases.SetSettleHook(h)
}
