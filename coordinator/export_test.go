package coordinator

import (
	"time"

	"github.com/holdfast-go/holdfast/fsm"
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
	if t := l.endedAt(); !t.IsZero() {
		return t
	}
	return l.life.Session().ValidUntil()
}

// ShardLeaseStart returns when this node began to believe the shard lease.
func ShardLeaseStart(l *ShardLease) time.Time { return l.life.Start() }

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
