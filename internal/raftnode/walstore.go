package raftnode

import (
	"fmt"
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// walDir is the write-ahead log's directory under raft/.
const walDir = "wal"

// WALSegmentSize is the size past which the write-ahead log starts a new
// segment file (each is preallocated to it), so that compaction can delete
// old ones: the default of Timing.LogSegmentSize.
const WALSegmentSize = 8 << 20

// openWAL opens (or creates) the write-ahead log in dir (internal/walog):
// it appends each batch of raft entries to a segment file and syncs once,
// where bbolt writes its pages and its meta page with a sync each. The log
// is also the stable store (term and vote). Its repairs on open, and the
// failures it does not return (a leftover file it could not remove), go to
// log (and those failures to o.count).
func openWAL(dir string, readOnly bool, o storeOptions, log *slog.Logger, cs *closers) (raft.LogStore, raft.StableStore, error) {
	segSize := o.segmentSize
	if segSize == 0 {
		segSize = WALSegmentSize
	}
	opts := walog.Options{SegmentSize: segSize, ReadOnly: readOnly, FS: o.fs,
		Note: func(op, msg string, err error) {
			if err != nil {
				if o.count != nil {
					o.count(op)
				}
				log.Warn("raft log: "+msg, "op", op, "error", err)
				return
			}
			log.Warn("raft log: " + msg)
		}}
	if o.writes != nil {
		opts.DeferSync, opts.Deferred = o.writes.decide, o.writes.deferred
	}
	w, err := walog.Open(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	if o.writes != nil {
		o.writes.log = w
	}
	*cs = append(closers{w}, *cs...)
	return w, w, nil
}

// EachLogEntry calls fn with each entry of the raft log in a stopped
// node's data dir, in log order, and returns fn's first error. It opens the
// log read-only, whichever way it is stored (OpenDataDir: it takes the
// data dir's lock and fails while a node runs on it). A data dir with no
// raft log is an error.
func EachLogEntry(dataDir string, fn func(*raft.Log) error) error {
	d, err := OpenDataDir(dataDir, true)
	if err != nil {
		return err
	}
	defer d.Close()
	first, err := d.Logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := d.Logs.LastIndex()
	if err != nil {
		return err
	}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := d.Logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("holdfast: raft log entry %d: %w", i, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return nil
}
