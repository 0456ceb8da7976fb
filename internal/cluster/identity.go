package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Record is where the node keeps the cluster it belongs to: its data dir
// (raftnode.ClusterFile), so that a restarted node knows its cluster
// before its first gossip or raft message.
type Record interface {
	// ID returns the cluster's ID, "" while the node belongs to none.
	ID() string
	// Set records the cluster id (and its incarnation, the creation time in
	// µs, 0 while unknown); durably before it returns.
	Set(id string, incarnation int64) error
}

// memRecord is the Record of a part built without one (in memory).
type memRecord struct {
	mu sync.Mutex
	id string
}

func (r *memRecord) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

func (r *memRecord) Set(id string, _ int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.id = id
	return nil
}

// ForeignClusterError is the refusal of a node whose data dir belongs to
// one cluster to join the gossip pool of another (Join). It wraps
// wire.ErrForeignCluster.
type ForeignClusterError struct {
	// Ours is the cluster this node's data dir belongs to, Theirs the one
	// the seeds' member Member belongs to.
	Ours, Theirs, Member string
}

// Error names the member and the two clusters.
func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("member %s belongs to cluster %s, not %s", e.Member, e.Theirs, e.Ours)
}

// Unwrap makes errors.Is(err, wire.ErrForeignCluster) true.
func (e *ForeignClusterError) Unwrap() error { return wire.ErrForeignCluster }

// record sets the cluster this node belongs to and, when it changed,
// gossips it; it reports false when the data dir could not record it
// (a full disk, a failed sync), for the caller to try again later. The
// replica's cluster wins over a different one recorded
// earlier (only a bootstrap by an earlier release's proposer can make them
// differ: raft traffic of other clusters never reaches raft).
func (cl *Cluster) record(id string, incarnation int64) bool {
	prev := cl.ClusterID()
	if prev != "" && prev != id {
		cl.log.Error("the replicated state belongs to another cluster than the data dir recorded; recording the replica's",
			"recorded", prev, "cluster", id)
	}
	if err := cl.o.Record.Set(id, incarnation); err != nil {
		cl.log.Error("recording the cluster in the data dir failed; trying again at the next change", "cluster", id, "error", err)
		return false
	}
	if prev == id {
		return true
	}
	cl.log.Info("member of cluster", "cluster", id)
	ctx, cancel := context.WithTimeout(cl.ctx, cl.o.RPCTimeout)
	err := cl.members.SetMeta(ctx, cl.LocalMeta())
	cancel()
	if err != nil {
		// The new metadata is set locally and still gossiped; only
		// the wait for its first broadcast timed out.
		cl.log.Debug("gossiping the cluster ID", "error", err)
	}
	return true
}

// ServeIdentity answers wire.MethodIdentity: this node's ID and the
// cluster it belongs to.
func (cl *Cluster) ServeIdentity() ([]byte, error) {
	return transport.Encode(wire.IdentityReply{NodeID: cl.o.ID, ClusterID: cl.ClusterID()})
}

// foreignMember says why the leader must not add member m, by m's own
// answer to wire.MethodIdentity, or "" when it may: m is the node its
// gossip names and its data dir belongs to no cluster or to this one. A
// member of an earlier release (which does not know the method) may.
func (cl *Cluster) foreignMember(ctx context.Context, m membership.Member) string {
	ctx, cancel := context.WithTimeout(ctx, cl.o.RPCTimeout)
	defer cancel()
	var rep wire.IdentityReply
	err := cl.o.Caller.Call(ctx, m.Meta.RPCAddr, wire.MethodIdentity, struct{}{}, &rep)
	var re *transport.RemoteError
	switch {
	case errors.As(err, &re) && re.Code == wire.CodeBadMethod:
		return ""
	case err != nil:
		return "its identity could not be asked: " + err.Error()
	case rep.NodeID != m.Meta.NodeID:
		return fmt.Sprintf("the node at %s is %s, not %s", m.Meta.RPCAddr, rep.NodeID, m.Meta.NodeID)
	case rep.ClusterID != "" && rep.ClusterID != cl.ClusterID():
		return "its data dir belongs to cluster " + rep.ClusterID
	}
	return ""
}
