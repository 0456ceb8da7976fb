package coordinator

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// newCluster builds the formation part (internal/cluster) over this
// node's raft, transport and replica; gossip is attached by
// startMembership.
func (c *Coordinator) newCluster() *cluster.Cluster {
	o := cluster.Options{
		NodeName:             c.cfg.NodeName,
		ID:                   c.id,
		RPCAddr:              c.trans.Addr(),
		Zone:                 c.cfg.Zone,
		Eligible:             c.cfg.DataDir != "",
		Join:                 c.cfg.Join,
		Config:               c.cfg.Cluster,
		Shards:               c.cfg.Shards.Count,
		SnapshotThreshold:    c.cfg.Raft.SnapshotThreshold,
		RPCTimeout:           c.cfg.RPCTimeout,
		HeartbeatTimeout:     c.cfg.Raft.HeartbeatTimeout,
		CommitTimeout:        c.cfg.Raft.CommitTimeout,
		FormationLogInterval: FormationLogInterval,
		TLS:                  c.cfg.TLS != nil,
		RequireTLS:           c.cfg.TLS != nil && c.cfg.TLS.RequireTLS,
		Raft:                 c.raft,
		Caller:               c.trans,
		Heard:                heardBy{c},
		View:                 c.fsm.View,
		ApplyLocal: func(ctx context.Context, cmd []byte) error {
			_, err := c.node.ApplyLocal(ctx, cmd)
			return err
		},
		Issue: func(ctx context.Context, mk func() raft.Future) error {
			_, err := raftnode.Issue(ctx, &c.futs, mk)
			return err
		},
		Metrics: c.metrics.cluster,
		NewID:   raftnode.NewID,
		Log:     c.log,
		Closing: c.closing,
	}
	return cluster.New(o)
}

// heardBy is the lessor's record of the nodes that reached this leader,
// as the cluster part asks for it.
type heardBy struct{ c *Coordinator }

func (h heardBy) HeardWithin(id string, d time.Duration, now time.Time) bool {
	return h.c.lessor.HeardWithin(id, d, now)
}

func (h heardBy) NoteHeard(id string, t time.Time) { h.c.lessor.NoteHeard(id, t) }

// validateAdvertise checks an Advertise* field (see cluster.CheckAdvertise).
func validateAdvertise(field, addr string, ipOnly bool) error {
	if err := cluster.CheckAdvertise(addr, ipOnly); err != nil {
		return fieldErr(field, "%s", err)
	}
	return nil
}
