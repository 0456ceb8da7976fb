package coordinator

import (
	"errors"

	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// loadIdentity reads (or creates) the node identity in the data dir; a
// data dir last used under another name is a Config error.
func loadIdentity(dataDir, name string, allowRename bool) (raftnode.Identity, error) {
	id, err := raftnode.LoadIdentity(dataDir, name, allowRename)
	var re *raftnode.RenameError
	if errors.As(err, &re) {
		return id, fieldErr("NodeName", "is %q, but DataDir %s holds the identity of node %q; "+
			"set Config.AllowRename to rename that node, or give this one another DataDir", re.Name, re.DataDir, re.Previous)
	}
	return id, err
}

// startRaft opens the stores and starts the raft instance.
func (c *Coordinator) startRaft() error {
	n, err := raftnode.Start(raftnode.Options{
		ID:            c.id,
		DataDir:       c.cfg.DataDir,
		LogFS:         c.cfg.logFS,
		Timing:        c.cfg.Raft,
		RPCTimeout:    c.cfg.RPCTimeout,
		Trans:         c.trans,
		FSM:           c.fsm,
		NotifyCh:      c.leaderCh,
		Futures:       &c.futs,
		Context:       c.ctx,
		Log:           c.log,
		Metrics:       c.metrics.raft,
		Applied:       func() uint64 { return c.fsm.View().Index() },
		LeaderChanged: c.noLeader.Changed,
		Cluster:       c.clusterFile.ID,
	})
	if err != nil {
		return err
	}
	c.node, c.raft = n, n.Raft()
	return nil
}
