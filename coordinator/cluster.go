package coordinator

import (
	"context"

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
		Config:               c.cfg.Cluster.part(),
		Shards:               c.cfg.Shards.Count,
		SnapshotThreshold:    c.cfg.Raft.SnapshotThreshold,
		RPCTimeout:           c.cfg.RPCTimeout,
		HeartbeatTimeout:     c.cfg.Raft.HeartbeatTimeout,
		CommitTimeout:        c.cfg.Raft.CommitTimeout,
		FormationLogInterval: FormationLogInterval,
		TLS:                  c.cfg.TLS != nil,
		RequireTLS:           c.cfg.TLS != nil && c.cfg.TLS.RequireTLS,
		Raft:                 c.node.Raft(),
		Caller:               c.trans,
		Heard:                c.lessor, // its record of the nodes that reached this leader
		View:                 c.fsm.View,
		ApplyLocal: func(ctx context.Context, cmd []byte) error {
			_, err := c.node.CommitAsLeader(ctx, cmd)
			return err
		},
		Issue:   c.node.IssueFuture,
		Record:  clusterRecord{c.clusterFile},
		Metrics: c.metrics.cluster,
		NewID:   raftnode.NewID,
		Log:     c.log,
		Closing: c.closing,
	}
	return cluster.New(o)
}

// clusterRecord is the cluster part's Record over the data dir's file.
type clusterRecord struct{ f *raftnode.ClusterFile }

func (r clusterRecord) ID() string { return r.f.ID() }

func (r clusterRecord) Set(id string, incarnation int64) error {
	return r.f.Record(raftnode.ClusterRecord{ID: id, Incarnation: incarnation})
}
