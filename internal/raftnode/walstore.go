package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

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
// log whichever way it is stored (and so takes the data dir's lock: it fails
// while a node runs on it). A data dir with no raft log is an error.
func EachLogEntry(dataDir string, fn func(*raft.Log) error) error {
	if _, err := os.Stat(filepath.Join(dataDir, "raft")); err != nil {
		return fmt.Errorf("holdfast: no raft log in %s: %w", dataDir, err)
	}
	st, err := openStores(dataDir, slog.New(slog.DiscardHandler), func() bool { return true })
	if err != nil {
		return err
	}
	defer st.closer.Close()
	first, err := st.logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := st.logs.LastIndex()
	if err != nil {
		return err
	}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := st.logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("holdfast: raft log entry %d: %w", i, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return nil
}
