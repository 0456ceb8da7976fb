package coordinator

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// leaveCluster applies Config.Cluster.LeaveCluster: when the data dir
// belongs to that cluster, its raft state, node identity, cluster record and
// gossip keyring are moved aside, and the node starts as a new one.
func (c *Coordinator) leaveCluster() error {
	id := c.cfg.Cluster.LeaveCluster
	moved, err := raftnode.LeaveCluster(c.cfg.DataDir, id, time.Now(), keyring.FileName)
	if err != nil {
		return err
	}
	if moved != "" {
		c.log.Warn("left the cluster the data dir belonged to (Config.Cluster.LeaveCluster): its raft state and identity are moved aside; "+
			"this node starts as a new node", "cluster", id, "moved_to", moved)
	}
	return nil
}

// recordOlderDataDir records the cluster of a data dir written before the
// data dir recorded it, once raft has restored its snapshot: from the
// replica, else from the InitCluster in its raft log. Until then such a
// node gossiped no cluster ID until its log was replayed.
func (c *Coordinator) recordOlderDataDir() {
	if c.clusterFile.ID() != "" || c.cfg.DataDir == "" || !c.node.HasState() {
		return
	}
	cl := c.fsm.View().Cluster()
	if cl.ID == "" {
		if init, ok := c.node.FindInit(); ok {
			cl.ID, cl.Created = init.ClusterID, init.Created
		}
	}
	if cl.ID == "" {
		return // not initialised yet: recorded once the replica shows it
	}
	if err := (clusterRecord{c.clusterFile}).Set(cl.ID, cl.Created); err != nil {
		c.log.Warn("recording the data dir's cluster failed", "cluster", cl.ID, "error", err)
		return
	}
	c.log.Info("recorded the cluster of a data dir written by an earlier release", "cluster", cl.ID)
}

// ForeignClusterError is New's refusal of a data dir that belongs to
// another cluster than the one its Join seeds belong to. It wraps
// ErrForeignCluster.
type ForeignClusterError struct {
	// DataDir is the node's data dir; Cluster the cluster it belongs to.
	DataDir, Cluster string
	// SeedsCluster is the cluster of Member, a member of the seeds' pool.
	SeedsCluster, Member string
}

func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("%v: DataDir %s belongs to cluster %s, but %s, a member of the Join seeds' pool, belongs to cluster %s. "+
		"To make this node leave cluster %s and join %s as a new node, set Config.Cluster.LeaveCluster to %q "+
		"(its raft state and identity are moved aside); or give Join the seeds of cluster %s",
		ErrForeignCluster, e.DataDir, e.Cluster, e.Member, e.SeedsCluster, e.Cluster, e.SeedsCluster, e.Cluster, e.Cluster)
}

// Unwrap makes errors.Is(err, ErrForeignCluster) true.
func (e *ForeignClusterError) Unwrap() error { return ErrForeignCluster }

// foreignClusterErr is New's error for a data dir of another cluster than
// the seeds'.
func foreignClusterErr(dataDir string, fe *cluster.ForeignClusterError) error {
	return &ForeignClusterError{DataDir: dataDir, Cluster: fe.Ours, SeedsCluster: fe.Theirs, Member: fe.Member}
}
