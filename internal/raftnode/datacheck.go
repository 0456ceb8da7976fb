package raftnode

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// The errors of a data dir that cannot be examined at all.
var (
	// ErrNoRaftData is OpenDataDir's error for a data dir with no raft
	// directory.
	ErrNoRaftData = errors.New("holdfast: no raft data")
)

// DataReport is what CheckDataDir found in a stopped node's data dir.
type DataReport struct {
	// DataDir is the data dir; Format its raft log's ("walog", "bolt"; ""
	// when it could not be opened).
	DataDir, Format string
	// First, Last and LastTerm describe the log (0 when empty).
	First, Last, LastTerm uint64
	// CurrentTerm is raft's term; Vote the candidate voted for in
	// VoteTerm ("" when none).
	CurrentTerm, VoteTerm uint64
	Vote                  string
	// Segments are the write-ahead log's segment files (none for bbolt).
	Segments []walog.SegmentInfo
	// Snapshots are the snapshots kept, newest first.
	Snapshots []*raft.SnapshotMeta
	// Repairs is what the node's next start would repair (a torn last
	// write cut, a copy kept; an older format upgraded).
	Repairs []string
	// Problems is what makes the data dir untrustworthy: the node refuses
	// to start on it (or must not be trusted) while there is any.
	Problems []string
}

// CheckDataDir inspects the raft stores of a stopped node's data dir
// without changing anything (OpenDataDir, read-only): the log's segments,
// range and terms, the term and vote, the snapshots, what the next start
// would repair, and what is wrong. It returns an error only when the data
// dir cannot be examined at all (none, or a node runs on it); an
// untrustworthy log is a Problem.
func CheckDataDir(dataDir string) (*DataReport, error) {
	r := &DataReport{DataDir: dataDir}
	d, err := OpenDataDir(dataDir, true)
	switch {
	case errors.Is(err, ErrNoRaftData), errors.Is(err, ErrDataDirLocked):
		return nil, err
	case err != nil:
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	defer d.Close()
	r.Format = d.Format
	if w, ok := d.Logs.(*walog.Log); ok {
		r.Segments, r.Repairs = w.Segments(), w.Repairs()
	}
	r.First, _ = d.Logs.FirstIndex()
	r.Last, _ = d.Logs.LastIndex()
	r.CurrentTerm, _ = d.Stable.GetUint64(keyCurrentTerm)
	r.VoteTerm, _ = d.Stable.GetUint64(keyLastVoteTerm)
	if v, err := d.Stable.Get(keyLastVoteCand); err == nil {
		r.Vote = string(v)
	}
	for i := r.First; i <= r.Last && i > 0; i++ {
		var l raft.Log
		if err := d.Logs.GetLog(i, &l); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("entry %d of %d..%d cannot be read: %v", i, r.First, r.Last, err))
			break
		}
		if l.Term < r.LastTerm {
			r.Problems = append(r.Problems, fmt.Sprintf("entry %d has term %d after term %d: the last log term goes backwards", i, l.Term, r.LastTerm))
		}
		r.LastTerm = l.Term
	}
	if r.LastTerm > r.CurrentTerm {
		r.Problems = append(r.Problems, fmt.Sprintf("the current term (%d) is below the last log term (%d): the term or the vote was lost", r.CurrentTerm, r.LastTerm))
	}
	if r.Snapshots, err = d.Snapshots.List(); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("listing the snapshots: %v", err))
	}
	snapIndex := uint64(0)
	if len(r.Snapshots) > 0 {
		snapIndex = r.Snapshots[0].Index
	}
	if r.First > snapIndex+1 {
		r.Problems = append(r.Problems, fmt.Sprintf("the log starts at entry %d but the newest snapshot ends at entry %d: the entries between are lost", r.First, snapIndex))
	}
	return r, nil
}
