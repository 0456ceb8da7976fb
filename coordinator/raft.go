package coordinator

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/transport"
)

// raftStores are the log, stable and snapshot stores of one raft instance.
type raftStores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	closer io.Closer // nil for in-memory stores
}

// openStores opens bbolt-backed stores and file snapshots under dataDir, or
// in-memory stores when dataDir is empty.
func openStores(dataDir string, c *Coordinator) (*raftStores, error) {
	if dataDir == "" {
		mem := raft.NewInmemStore()
		return &raftStores{logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
	dir := filepath.Join(dataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: opening raft log (is another node using %s?): %w", dataDir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logbridge.HCLog(c.log, "raft-snapshot", c.closing))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return &raftStores{logs: bolt, stable: bolt, snaps: snaps, closer: bolt}, nil
}

// raftConfig builds raft's configuration from ours.
func (c *Coordinator) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.id)
	rc.HeartbeatTimeout = c.cfg.Raft.HeartbeatTimeout
	rc.ElectionTimeout = c.cfg.Raft.ElectionTimeout
	rc.LeaderLeaseTimeout = c.cfg.Raft.LeaderLeaseTimeout
	rc.CommitTimeout = c.cfg.Raft.CommitTimeout
	rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	rc.TrailingLogs = c.cfg.TrailingLogs
	rc.SnapshotInterval = 30 * time.Second
	rc.NotifyCh = c.leaderCh
	rc.Logger = logbridge.HCLog(c.log, "raft", c.closing)
	return rc
}

// startRaft opens the stores and starts the raft instance.
func (c *Coordinator) startRaft() error {
	stores, err := openStores(c.cfg.DataDir, c)
	if err != nil {
		return err
	}
	c.stores = stores
	c.raftTrans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  c.trans.StreamLayer(),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  logbridge.HCLog(c.log, "raft-net", c.closing),
	})
	r, err := raft.NewRaft(c.raftConfig(), c.fsm, stores.logs, stores.stable, stores.snaps, noPipeline{c.raftTrans})
	if err != nil {
		c.raftTrans.Close()
		if stores.closer != nil {
			stores.closer.Close()
		}
		return fmt.Errorf("holdfast: starting raft: %w", err)
	}
	c.raft = r
	return nil
}

// raftAddress is this node's address as raft knows it.
func (c *Coordinator) raftAddress() raft.ServerAddress {
	return transport.RaftAddress(c.trans.Addr(), c.id)
}

// raftServers returns the current raft configuration, or nil when it cannot
// be read (shutting down).
func (c *Coordinator) raftServers() []raft.Server {
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// noPipeline turns off raft's pipelined replication. With hashicorp/raft
// v1.7.3, a pipeline to a follower that stops answering can deadlock raft's
// Shutdown: the response decoder blocks handing a result to a consumer that
// has already exited, and the sender blocks on the decoder forever. Without
// the pipeline, replication sends one AppendEntries at a time per follower,
// which is ample for holdfast's write rate (sessions and grants, never
// keepalives).
type noPipeline struct{ *raft.NetworkTransport }

// AppendEntriesPipeline reports that pipelining is not supported.
func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
