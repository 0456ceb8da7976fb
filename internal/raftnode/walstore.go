package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/holdfast-go/holdfast/internal/logbridge"
)

// walDir is the write-ahead log's directory under raft/.
const walDir = "wal"

// walSegmentSize is the size of one segment file of the write-ahead log.
// A segment is preallocated, so this is the disk a voter's log takes at the
// least; 8 MiB holds tens of thousands of holdfast's commands, more than
// the entries raft keeps between snapshots.
const walSegmentSize = 8 << 20

// openWAL opens (or creates) hashicorp/raft-wal's write-ahead log in dir: it
// appends each batch of raft entries to a segment file and fsyncs once,
// where bbolt writes its pages and its meta page with an fsync each. On
// this machine's disk that made a commit about three times cheaper, which
// is most of an acquire's time with three voters. Term and vote (the stable
// store) live in the log's small bbolt meta file, written only when they
// change.
//
// raft-wal's Close leaves the meta file open, so the meta store is opened
// here and closed after the log.
func openWAL(dir string, log *slog.Logger, closing func() bool) (raft.LogStore, raft.StableStore, io.Closer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(walSegmentSize),
		wal.WithLogger(logbridge.HCLog(log, "raft-wal", closing)))
	if err != nil {
		meta.Close()
		return nil, nil, nil, err
	}
	return w, w, closers{w, meta}, nil
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
