package raftnode

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/internal/atomicfile"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// identityFile holds the node identity; nameFile the name of the node it
// was last used by (data dirs written before nameFile existed lack it: the
// first start adopts its name).
const (
	identityFile = "node-id"
	nameFile     = "node-name"
)

// NewID returns a fresh random identifier (128 bits, hex).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Identity is what LoadIdentity found in the data dir.
type Identity struct {
	ID          string
	Fresh       bool   // created now
	RenamedFrom string // the previous node name, when allowRename renamed it
}

// RenameError is LoadIdentity's refusal of a data dir last used under
// another node name.
type RenameError struct {
	Name, Previous, DataDir string
}

// Error names the node, its data dir and the node whose identity the
// data dir holds.
func (e *RenameError) Error() string {
	return fmt.Sprintf("node name is %q, but data dir %s holds the identity of node %q", e.Name, e.DataDir, e.Previous)
}

// ConfigField names the Config field at fault and says what to do, for
// the coordinator's ConfigError.
func (e *RenameError) ConfigField() (field, msg string) {
	return "NodeName", fmt.Sprintf("is %q, but DataDir %s holds the identity of node %q; "+
		"set Config.AllowRename to rename that node, or give this one another DataDir", e.Name, e.DataDir, e.Previous)
}

// DataDirOptions are what PrepareDataDir needs.
type DataDirOptions struct {
	// DataDir is the node's data dir ("": none); NodeName its name.
	DataDir, NodeName string
	// AllowRename lets a data dir last used under another name keep its
	// identity under NodeName.
	AllowRename bool
	// LeaveCluster, if set, is the cluster the data dir leaves (see
	// LeaveCluster), moving the files named in Also with it.
	LeaveCluster string
	Also         []string
	// Log is where what was found is logged.
	Log *slog.Logger
}

// PrepareDataDir prepares a node's data dir for its start: it leaves
// o.LeaveCluster (LeaveCluster), loads or creates the node identity
// (LoadIdentity: a *RenameError for a data dir of another name), opens the
// cluster record (OpenClusterFile), and logs what it did and found.
func PrepareDataDir(o DataDirOptions) (Identity, *ClusterFile, error) {
	moved, err := LeaveCluster(o.DataDir, o.LeaveCluster, time.Now(), o.Also...)
	if err != nil {
		return Identity{}, nil, err
	}
	if moved != "" {
		o.Log.Warn("left the cluster the data dir belonged to (Config.Cluster.LeaveCluster): its raft state and identity are moved aside; "+
			"this node starts as a new node", "cluster", o.LeaveCluster, "moved_to", moved)
	}
	ident, err := LoadIdentity(o.DataDir, o.NodeName, o.AllowRename)
	if err != nil {
		return ident, nil, err
	}
	f, err := OpenClusterFile(o.DataDir)
	if err != nil {
		return ident, nil, err
	}
	if ident.RenamedFrom != "" {
		o.Log.Warn("data dir renamed (Config.AllowRename): keeping its identity under this name", "previous_name", ident.RenamedFrom, "id", ident.ID)
	}
	o.Log.Info("starting", "id", ident.ID, "new_identity", ident.Fresh, "voter_eligible", o.DataDir != "")
	return ident, f, nil
}

// LoadIdentity returns the node's identity: the one stored in dataDir, or a
// new one stored there for next time. Without a data dir every start is a
// new identity. The raft server ID is this identity, not the node name, so a
// node that comes back under the same name with an empty data dir is a new
// server to raft and cannot answer for the old one's vote. A data dir last
// used under another name is refused (a *RenameError) unless allowRename,
// which records the new name.
//
// A start that finds an identity syncs the data dir before it goes on: a
// start that died after renaming a file of the directory into place (the
// identity, the name, the cluster record) and before syncing the directory
// left the rename in the page cache alone. This start reads it and runs as
// that node (raft keeps its term and vote under the identity), so a power
// cut later must not take it away, or the next start would make a new
// identity beside the old node's raft state.
func LoadIdentity(dataDir, name string, allowRename bool) (Identity, error) {
	return loadIdentity(walog.OSFS(), dataDir, name, allowRename)
}

// loadIdentity is LoadIdentity on the file system fsys.
func loadIdentity(fsys walog.FS, dataDir, name string, allowRename bool) (Identity, error) {
	if dataDir == "" {
		return Identity{ID: NewID(), Fresh: true}, nil
	}
	if err := walog.MkdirAll(fsys, dataDir); err != nil { // parents synced: a first boot survives a power cut
		return Identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	path := filepath.Join(dataDir, identityFile)
	b, err := atomicfile.ReadFS(fsys, path)
	switch {
	case err == nil:
		id := Identity{ID: strings.TrimSpace(string(b))}
		if len(id.ID) != 32 {
			return Identity{}, fmt.Errorf("holdfast: DataDir: %s holds %q, not a node identity", path, id.ID)
		}
		if id.RenamedFrom, err = checkName(fsys, dataDir, name, allowRename); err != nil {
			return id, err
		}
		if err := fsys.SyncDir(dataDir); err != nil {
			return Identity{}, fmt.Errorf("holdfast: DataDir: syncing %s: %w", dataDir, err)
		}
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return Identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	id := Identity{ID: NewID(), Fresh: true}
	if err := atomicfile.WriteFS(fsys, path, []byte(id.ID+"\n")); err != nil {
		return Identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	if err := atomicfile.WriteFS(fsys, filepath.Join(dataDir, nameFile), []byte(name+"\n")); err != nil {
		return Identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return id, nil
}

// checkName compares name with the node name recorded in dataDir, and
// records name when there is none, or when it differs and allowRename;
// it returns the previous name after a rename.
func checkName(fsys walog.FS, dataDir, name string, allowRename bool) (renamedFrom string, err error) {
	path := filepath.Join(dataDir, nameFile)
	b, err := atomicfile.ReadFS(fsys, path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("holdfast: DataDir: %w", err)
	}
	prev := strings.TrimSpace(string(b))
	if err == nil && prev == name {
		return "", nil
	}
	if err == nil && !allowRename {
		return "", &RenameError{Name: name, Previous: prev, DataDir: dataDir}
	}
	if err := atomicfile.WriteFS(fsys, path, []byte(name+"\n")); err != nil {
		return "", fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return prev, nil
}
