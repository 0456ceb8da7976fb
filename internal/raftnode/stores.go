package raftnode

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// memory in front of the log on disk: replication (the entry before each
// AppendEntries batch, and the batch) and a follower's apply read them
// there instead of reading and decoding each one from the file.
const logCacheSize = 512

// openStores opens the raft stores under dataDir, or in-memory stores when
// dataDir is empty. closing mutes the stores' logs once the host shuts down.
//
// A data dir whose raft log is a bbolt file (raft/raft.db, written before
// the write-ahead log) keeps it; any other gets the write-ahead log (see
// openWAL). Either way a cache of the latest entries sits in front of the
// log, snapshots are files under raft/, and the directory is locked while
// open, so that a second node on it fails at once.
func openStores(dataDir string, log *slog.Logger, closing func() bool) (*stores, error) {
	if dataDir == "" {
		mem := raft.NewInmemStore()
		return &stores{logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
	dir := filepath.Join(dataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: is another node using %s? %w", dataDir, err)
	}
	var disk raft.LogStore
	var stable raft.StableStore
	var closer io.Closer
	bolt, err := hasBolt(dir)
	if err == nil && bolt {
		disk, stable, closer, err = openBolt(dir)
	} else if err == nil {
		disk, stable, closer, err = openWAL(filepath.Join(dir, walDir))
	}
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("holdfast: DataDir: opening the raft log in %s: %w", dataDir, err)
	}
	closer = closers{closer, lock}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logbridge.HCLog(log, "raft-snapshot", closing))
	if err != nil {
		closer.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	logs, err := raft.NewLogCache(logCacheSize, disk)
	if err != nil {
		closer.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return &stores{logs: logs, stable: stable, snaps: snaps, closer: closer}, nil
}

// boltFile is the bbolt raft log of data dirs written before the
// write-ahead log.
const boltFile = "raft.db"

// hasBolt reports whether dir holds a bbolt raft log. A raft.db that
// cannot be examined (EACCES, EIO, a link loop) is an error, never a reason
// to start a new log beside it; so is a raft.db beside a write-ahead log.
func hasBolt(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, boltFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("examining %s: %w", boltFile, err)
	}
	names, err := os.ReadDir(filepath.Join(dir, walDir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("examining %s: %w", walDir, err)
	case len(names) > 0:
		return false, fmt.Errorf("%s holds both a bbolt raft log (%s) and a write-ahead log (%s): which one is this node's is unknown",
			dir, boltFile, walDir)
	}
	return true, nil
}

// openBolt opens the bbolt raft log in dir. bbolt keeps its fsync on every
// commit. It does not write its freelist on every commit (NoFreelistSync,
// as etcd does): that saves a page write per raft append, and the freelist
// is rebuilt by a scan when the file is opened. Files written either way
// open either way.
func openBolt(dir string) (raft.LogStore, raft.StableStore, io.Closer, error) {
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, boltFile),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return bolt, bolt, bolt, nil
}

// closers closes each of its closers in order and returns the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
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
