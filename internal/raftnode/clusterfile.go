package raftnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/atomicfile"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// clusterFileName holds, in a data dir, the cluster the node belongs to.
const clusterFileName = "cluster.json"

// ClusterRecord is the cluster a data dir belongs to.
type ClusterRecord struct {
	// ID is the cluster's ID ("" for none).
	ID string `json:"cluster_id"`
	// Incarnation is the cluster's creation time by its creating leader's
	// clock, in microseconds since the Unix epoch (fsm.Cluster.Created): a
	// cluster created anew has a later one. 0 until the node's replica has
	// shown it, and for clusters created by an earlier release.
	Incarnation int64 `json:"incarnation,omitempty"`
}

// ClusterFile is the record of the cluster a node belongs to, kept in its
// data dir (in memory only for a node without one). It is written once the
// node bootstraps a cluster or its replica shows the cluster it joined, and
// read from the node's first start after that, before any gossip or raft
// message: a restarted node knows its cluster from its first word. Safe for
// concurrent use.
type ClusterFile struct {
	fsys walog.FS
	path string // "" without a data dir
	cur  atomic.Pointer[ClusterRecord]
	mu   sync.Mutex // serialises Record
}

// OpenClusterFile reads the record in dataDir ("" for none: an in-memory
// record). A record that cannot be read or parsed is an error naming the
// file: delete it and the node learns its cluster again from its raft log.
func OpenClusterFile(dataDir string) (*ClusterFile, error) {
	return openClusterFile(walog.OSFS(), dataDir)
}

// openClusterFile is OpenClusterFile on the file system fsys.
func openClusterFile(fsys walog.FS, dataDir string) (*ClusterFile, error) {
	f := &ClusterFile{fsys: fsys}
	f.cur.Store(&ClusterRecord{})
	if dataDir == "" {
		return f, nil
	}
	f.path = filepath.Join(dataDir, clusterFileName)
	b, err := atomicfile.ReadFS(fsys, f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	var r ClusterRecord
	if err := json.Unmarshal(b, &r); err != nil || r.ID == "" || len(r.ID) > fsm.MaxNameLength || r.Incarnation < 0 {
		return nil, fmt.Errorf("holdfast: DataDir: %s is not a cluster record (%q); remove it and the node reads its cluster from its raft log again", f.path, b)
	}
	f.cur.Store(&r)
	return f, nil
}

// ID returns the cluster's ID, "" before the node belongs to one.
func (f *ClusterFile) ID() string { return f.cur.Load().ID }

// Get returns the record.
func (f *ClusterFile) Get() ClusterRecord { return *f.cur.Load() }

// Record stores r, durably before it returns when the record lives in a
// data dir; a record equal to the current one writes nothing.
func (f *ClusterFile) Record(r ClusterRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *f.cur.Load() == r {
		return nil
	}
	if f.path != "" {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFS(f.fsys, f.path, append(b, '\n')); err != nil {
			return fmt.Errorf("holdfast: DataDir: recording cluster %s: %w", r.ID, err)
		}
	}
	f.cur.Store(&r)
	return nil
}

// FindInit returns the first OpInitCluster in this node's raft log, for a
// data dir written before ClusterFile existed whose replica has not shown
// its cluster yet (its snapshot, if any, was restored: the command is in
// the log after it). It reads the log from its first entry until it finds
// one; false when there is none.
func (n *Node) FindInit() (fsm.InitCluster, bool) {
	first, err := n.stores.logs.FirstIndex()
	if err != nil {
		return fsm.InitCluster{}, false
	}
	last, err := n.stores.logs.LastIndex()
	if err != nil {
		return fsm.InitCluster{}, false
	}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if n.stores.logs.GetLog(i, &l) != nil || l.Type != raft.LogCommand {
			continue
		}
		if c, err := fsm.Decode(l.Data); err == nil && c.Op == fsm.OpInitCluster {
			return *c.Init, true
		}
	}
	return fsm.InitCluster{}, false
}

// LeaveCluster makes a data dir that belongs to cluster id a new node's:
// it moves the raft state, the node identity, the cluster record and the
// files named in also (the host's, such as the gossip keyring) into
// dataDir/left-<id>-<time> and returns that directory. A data dir of
// another cluster, or of none, is left alone ("", nil). It takes the raft
// directory's lock first, so it fails while a node runs on the data dir.
// The record moves last: a leave cut short by a crash is finished by the
// next one.
func LeaveCluster(dataDir, id string, now time.Time, also ...string) (string, error) {
	if dataDir == "" || id == "" {
		return "", nil
	}
	cf, err := OpenClusterFile(dataDir)
	if err != nil || cf.ID() != id {
		return "", err
	}
	raftDir := filepath.Join(dataDir, "raft")
	if _, err := os.Stat(raftDir); err == nil {
		lock, err := lockDir(raftDir)
		if err != nil {
			return "", fmt.Errorf("holdfast: DataDir: is a node running on %s? %w", dataDir, err)
		}
		defer lock.Close()
	}
	dest := filepath.Join(dataDir, "left-"+fileSafe(id)+"-"+now.UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return "", fmt.Errorf("holdfast: DataDir: %w", err)
	}
	names := append(append([]string{"raft", identityFile}, also...), clusterFileName)
	for _, name := range names {
		err := os.Rename(filepath.Join(dataDir, name), filepath.Join(dest, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("holdfast: DataDir: leaving cluster %s: %w", id, err)
		}
	}
	if err := errors.Join(atomicfile.SyncDir(dest), atomicfile.SyncDir(dataDir)); err != nil {
		return "", fmt.Errorf("holdfast: DataDir: leaving cluster %s: %w", id, err)
	}
	return dest, nil
}

// fileSafe keeps the letters, digits, '-' and '_' of s, replacing any
// other byte with '_'.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '_'
		}
	}
	return string(b)
}

// RecordOlderDataDir records in f the cluster of a data dir written before
// the data dir recorded it, once raft has restored its snapshot: from
// replica (the restored state's cluster), else from the InitCluster in
// the raft log. Until then such a node gossiped no cluster ID until its
// log was replayed. It does nothing for a data dir that records its
// cluster, for a node without one (dataDir ""), and for one whose cluster
// is not initialised yet (recorded once the replica shows it).
func (n *Node) RecordOlderDataDir(f *ClusterFile, dataDir string, replica fsm.Cluster, log *slog.Logger) {
	if f.ID() != "" || dataDir == "" || !n.HasState() {
		return
	}
	cl := replica
	if cl.ID == "" {
		if init, ok := n.FindInit(); ok {
			cl.ID, cl.Created = init.ClusterID, init.Created
		}
	}
	if cl.ID == "" {
		return // not initialised yet: recorded once the replica shows it
	}
	if err := f.Record(ClusterRecord{ID: cl.ID, Incarnation: cl.Created}); err != nil {
		log.Warn("recording the data dir's cluster failed", "cluster", cl.ID, "error", err)
		return
	}
	log.Info("recorded the cluster of a data dir written by an earlier release", "cluster", cl.ID)
}
