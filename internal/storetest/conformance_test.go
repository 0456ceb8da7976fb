package storetest

import (
	"path/filepath"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// TestConformanceWalog runs the conformance checks on walog in a real
// directory.
func TestConformanceWalog(t *testing.T) {
	Conformance(t, func(dir string) (Store, error) {
		l, err := walog.Open(filepath.Join(dir, "wal"), walog.Options{SegmentSize: 2048})
		if err != nil {
			return nil, err
		}
		return l, nil
	}, seeds(t, 1)[0])
}

// TestConformanceBolt runs them on raft-boltdb, the store of data dirs
// written before walog. (bbolt keeps no checksums of its pages, so the
// corruption checks do not apply to it; nor do the injected faults and
// power cuts, which need walog's file system seam.)
func TestConformanceBolt(t *testing.T) {
	Conformance(t, func(dir string) (Store, error) {
		b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			return nil, err
		}
		return b, nil
	}, seeds(t, 1)[0])
}
