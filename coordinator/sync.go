package coordinator

import (
	"context"
	"time"

	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// Sync returns once this node's replica has applied every command the
// raft leader had committed when Sync was called, as confirmed by a quorum
// of voters: a read of Owner, Table, Leases or Session after Sync returns
// reflects every write committed before the call (what etcd's
// linearizable reads and ZooKeeper's sync() give). It costs a round trip
// to the leader and a confirmation round with the voters (shared with
// concurrent keepalives and Syncs). Without a leader, or with a leader
// that cannot confirm its leadership (it lost its quorum), Sync keeps
// retrying until ctx ends and then returns an error wrapping ctx's error
// and the last failure (ErrNoLeader, or a network error);
// ErrShutdown once the node is shutting down.
func (c *Coordinator) Sync(ctx context.Context) error { return c.reads().Sync(ctx) }

// reads is the consistent-read path over this node's raft, replica and
// lessor (see raftnode.Reads).
func (c *Coordinator) reads() raftnode.Reads {
	return raftnode.Reads{Node: c.node, Replica: c.fsm, Confirm: c.lessor.ConfirmedCommit}
}

// NoLeaderSince returns, while this node knows no raft leader, since when
// (on this node's clock) it has known none, and true; its replica may then
// be stale (Owner, Table and Leases show the state as of the last leader it
// heard from). It returns false while a leader is known.
func (c *Coordinator) NoLeaderSince() (time.Time, bool) {
	_, known := c.RaftLeader()
	return c.noLeader.Since(known)
}
