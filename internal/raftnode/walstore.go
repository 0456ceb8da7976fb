package raftnode

import (
	"io"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// walDir is the write-ahead log's directory under raft/.
const walDir = "wal"

// walSegmentSize is the size past which the write-ahead log starts a new
// segment file, so that compaction can delete old ones.
const walSegmentSize = 8 << 20

// openWAL opens (or creates) the write-ahead log in dir (internal/walog):
// it appends each batch of raft entries to a segment file and syncs once,
// where bbolt writes its pages and its meta page with a sync each. The log
// is also the stable store (term and vote).
func openWAL(dir string) (raft.LogStore, raft.StableStore, io.Closer, error) {
	w, err := walog.Open(dir, walog.Options{SegmentSize: walSegmentSize})
	if err != nil {
		return nil, nil, nil, err
	}
	return w, w, w, nil
}

// EachLogEntry calls fn with each entry of the raft log in a stopped
// node's data dir, in log order, and returns fn's first error. It opens the
// data dir with OpenOffline (and so takes its lock: it fails while a node
// runs on it). A data dir with no raft log is an error.
func EachLogEntry(dataDir string, fn func(*raft.Log) error) error {
	o, err := OpenOffline(dataDir)
	if err != nil {
		return err
	}
	defer o.Close()
	return o.EachEntry(fn)
}
