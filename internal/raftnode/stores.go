package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/holdfast-go/holdfast/internal/logbridge"
)

// stores are the log, stable and snapshot stores of one raft instance.
type stores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	closer io.Closer // nil for in-memory stores
}

// logCacheSize is how many of the latest raft log entries are kept in
// memory in front of the bbolt log: replication (the entry before each
// AppendEntries batch, and the batch) and a follower's apply read them
// there instead of opening a bbolt read transaction and decoding each one.
const logCacheSize = 512

// openStores opens bbolt-backed stores and file snapshots under dataDir, or
// in-memory stores when dataDir is empty. closing mutes the snapshot
// store's logs once the host shuts down.
//
// bbolt keeps its fsync on every commit (raft's log stays durable). It does
// not write its freelist on every commit (NoFreelistSync, as etcd does):
// that saves a page write per raft append, and the freelist is rebuilt by a
// scan when the file is opened (the log is compacted, so the file stays
// small). Files written either way open either way.
func openStores(dataDir string, log *slog.Logger, closing func() bool) (*stores, error) {
	if dataDir == "" {
		mem := raft.NewInmemStore()
		return &stores{logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
	dir := filepath.Join(dataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: opening raft log (is another node using %s?): %w", dataDir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logbridge.HCLog(log, "raft-snapshot", closing))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	logs, err := raft.NewLogCache(logCacheSize, bolt)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return &stores{logs: logs, stable: bolt, snaps: snaps, closer: bolt}, nil
}

// raftConfig builds raft's configuration from the options.
func (n *Node) raftConfig() *raft.Config {
	t := n.opts.Timing
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.opts.ID)
	rc.HeartbeatTimeout = t.HeartbeatTimeout
	rc.ElectionTimeout = t.ElectionTimeout
	rc.LeaderLeaseTimeout = t.LeaderLeaseTimeout
	rc.CommitTimeout = t.CommitTimeout
	rc.SnapshotThreshold = t.SnapshotThreshold
	rc.TrailingLogs = t.TrailingLogs
	rc.SnapshotInterval = 30 * time.Second
	rc.NotifyCh = n.opts.NotifyCh
	// Only the labelled form of raft's go-metrics (the per-peer names are
	// the same figures again, built from a new string on every heartbeat).
	rc.NoLegacyTelemetry = true
	rc.Logger = logbridge.HCLog(n.log, "raft", n.closing)
	return rc
}
