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
	"github.com/holdfast-go/holdfast/internal/walog"
)

// stores are the log, stable and snapshot stores of one raft instance.
type stores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	closer io.Closer   // nil for in-memory stores
	guard  *storeGuard // nil for in-memory stores
	health *healthBook // nil for in-memory stores
}

// logCacheSize is how many of the latest raft log entries are kept in
// memory in front of the log on disk: replication (the entry before each
// AppendEntries batch, and the batch) and a follower's apply read them
// there instead of reading and decoding each one from the file.
const logCacheSize = 512

// storeOptions are openStores' settings: the write-ahead log's segment
// size (0: WALSegmentSize), count, which counts a storage error by
// operation (nil: not counted), and the write-ahead log's file system
// (nil: the operating system's).
type storeOptions struct {
	segmentSize int64
	count       func(op string)
	fs          walog.FS
	writes      *leaderWrites // lets the leader's appends defer their sync (nil: none do)
}

// openStores opens the raft stores under dataDir, or in-memory stores when
// dataDir is empty. closing mutes the stores' logs once the host shuts down.
//
// The log on disk is opened by openDisk (the write-ahead log, or the bbolt
// log of an older data dir); a storeGuard sits between it and raft (see
// there), then a cache of the latest entries. Snapshots are files under
// raft/, and the directory is locked while open, so that a second node on
// it fails at once. A log that cannot be trusted is refused with an error
// that says what is wrong and what to do.
func openStores(dataDir string, log *slog.Logger, closing func() bool, o storeOptions) (*stores, error) {
	if dataDir == "" {
		mem := raft.NewInmemStore()
		return &stores{logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
	d, err := openDataDir(dataDir, false, o, log, closing)
	if err != nil {
		return nil, err
	}
	var failed func() error
	if f, ok := d.Logs.(interface{ Failed() error }); ok {
		failed = f.Failed
	}
	health := newHealthBook(failed, o.count)
	guard := newStoreGuard(d.Logs, d.Stable, health, log)
	if r, ok := d.Logs.(interface{ Reserve(int64) error }); ok {
		guard.probe = func() error { return r.Reserve(64 << 10) }
	}
	logs, err := raft.NewLogCache(logCacheSize, guard)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return &stores{logs: logs, stable: guard, snaps: d.Snapshots, closer: d, guard: guard, health: health}, nil
}

// DataDir is the raft stores of a node's data dir, opened by OpenDataDir.
type DataDir struct {
	// Logs and Stable are the raft log and stable store; Snapshots the
	// snapshot store.
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
	// Format is "walog" (the write-ahead log) or "bolt" (raft/raft.db, the
	// log of data dirs written before it).
	Format string
	// Dir is the raft directory (DATADIR/raft).
	Dir string
	closers
}

// OpenDataDir opens the raft stores of a stopped node's data dir, for
// offline tools (holdfastctl data ...): the same stores, opened the same
// way, as the node itself uses, without the node. It takes the data dir's
// lock (it fails while a node runs on it). readOnly opens the log without
// repairing anything (walog.Options.ReadOnly; bbolt read-only): what an
// open would repair is then listed by the log's Repairs. A data dir with
// no raft directory is an error. Close releases everything.
func OpenDataDir(dataDir string, readOnly bool) (*DataDir, error) {
	if _, err := os.Stat(filepath.Join(dataDir, "raft")); err != nil {
		return nil, fmt.Errorf("%w in %s: %w", ErrNoRaftData, dataDir, err)
	}
	discard := slog.New(slog.DiscardHandler)
	return openDataDir(dataDir, readOnly, storeOptions{}, discard, func() bool { return true })
}

// openDataDir opens dataDir's raft stores on disk (see OpenDataDir).
func openDataDir(dataDir string, readOnly bool, o storeOptions, log *slog.Logger, closing func() bool) (*DataDir, error) {
	dir := filepath.Join(dataDir, "raft")
	if !readOnly {
		if err := walog.MkdirAll(walog.OSFS(), dir); err != nil {
			return nil, fmt.Errorf("holdfast: DataDir: %w", err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("holdfast: DataDir: is another node using %s? %w", dataDir, err)
	}
	d := &DataDir{Dir: dir, closers: closers{lock}}
	bolt, err := hasBolt(dir)
	switch {
	case err != nil:
	case bolt:
		d.Format = "bolt"
		d.Logs, d.Stable, err = openBolt(dir, readOnly, &d.closers)
	default:
		d.Format = "walog"
		d.Logs, d.Stable, err = openWAL(filepath.Join(dir, walDir), readOnly, o, log, &d.closers)
	}
	if err != nil {
		d.Close()
		return nil, untrusted(dataDir, err)
	}
	d.Snapshots, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, logbridge.HCLog(log, "raft-snapshot", closing))
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return d, nil
}

// untrusted is the error of a data dir whose raft log cannot be opened:
// what is wrong, and what to do about it.
func untrusted(dataDir string, err error) error {
	var ce *walog.CorruptError
	if !errors.As(err, &ce) {
		return fmt.Errorf("holdfast: DataDir: opening the raft log in %s: %w", dataDir, err)
	}
	return fmt.Errorf("holdfast: DataDir: the raft log in %s cannot be trusted, so this node does not start (a voter with a log that lost what it acknowledged can break the cluster's promises): %w. "+
		"Inspect it with `holdfastctl data check %s`. To recover: restore the data dir from a backup of this node taken while it was stopped, "+
		"or remove this node from the cluster, move %s aside and start the node with an empty data dir: it joins under a new identity and autopilot makes it a voter once it has caught up",
		dataDir, err, dataDir, dataDir)
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
// open either way. A writable file is synced once opened, as walog syncs
// its last segment: after a process crash the page cache may still hold a
// commit bbolt had written and not yet synced (its meta page), which the
// open reads and raft acts on at once.
func openBolt(dir string, readOnly bool, cs *closers) (raft.LogStore, raft.StableStore, error) {
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, boltFile),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, ReadOnly: readOnly},
	})
	if err != nil {
		return nil, nil, err
	}
	if !readOnly {
		if err := bolt.Sync(); err != nil {
			_ = bolt.Close()
			return nil, nil, fmt.Errorf("syncing %s after open: %w", boltFile, err)
		}
	}
	*cs = append(closers{bolt}, *cs...)
	return bolt, bolt, nil
}

// closers closes each of its closers in order and returns the first error.
type closers []io.Closer

// Close closes each in order and returns the first error.
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
