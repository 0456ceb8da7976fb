package raftnode

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// ErrDataDirLocked is the refusal to open a data dir whose lock another
// process (or another node in this one) holds: a node is running on it.
var ErrDataDirLocked = errors.New("the data dir is in use by a running node")

// ErrNotDataDir is OpenOffline's refusal of a directory that holds no
// node identity or no raft state.
var ErrNotDataDir = errors.New("not a holdfast data dir")

// Offline is a stopped node's data dir opened for inspection or recovery:
// its identity and its raft stores, locked (raft/LOCK) so that no node
// starts on it meanwhile.
type Offline struct {
	Dir  string
	ID   string // the node identity, its raft server ID
	Name string // the node name it was last used under ("" for data dirs older than the name file)
	st   *DataDir
}

// OpenOffline opens the data dir of a stopped node, the one way every
// offline reader opens one. It fails with an error wrapping
// ErrDataDirLocked while a node runs on it, and ErrNotDataDir for a
// directory without a node identity or raft state; it never creates
// either. Close releases it.
func OpenOffline(dataDir string) (*Offline, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, identityFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotDataDir, dataDir, err)
	}
	id := strings.TrimSpace(string(b))
	if len(id) != 32 {
		return nil, fmt.Errorf("%w: %s holds %q, not a node identity", ErrNotDataDir, filepath.Join(dataDir, identityFile), id)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "raft")); err != nil {
		return nil, fmt.Errorf("%w: no raft state in %s: %w", ErrNotDataDir, dataDir, err)
	}
	st, err := openDataDir(dataDir, false, storeOptions{}, slog.New(slog.DiscardHandler), func() bool { return true })
	if err != nil {
		return nil, err
	}
	name, _ := os.ReadFile(filepath.Join(dataDir, nameFile))
	return &Offline{Dir: dataDir, ID: id, Name: strings.TrimSpace(string(name)), st: st}, nil
}

// Close closes the stores and releases the data dir's lock.
func (o *Offline) Close() error { return o.st.Close() }

// RaftState is what a stopped node's raft stores hold, as raft would read
// it at start.
type RaftState struct {
	// Configuration is the latest raft configuration: the newest
	// snapshot's, or the last configuration entry after it in the log
	// (committed or not, as raft uses it).
	Configuration raft.Configuration
	// LastIndex and LastTerm are the log's last entry (or the snapshot's,
	// when the log after it is empty).
	LastIndex, LastTerm uint64
	// SnapshotIndex is the newest snapshot's last index (0: none).
	SnapshotIndex uint64
	// CurrentTerm is the term in the stable store.
	CurrentTerm uint64
}

// State reads the raft state of the data dir.
func (o *Offline) State() (RaftState, error) {
	var rs RaftState
	snaps, err := o.st.Snapshots.List()
	if err != nil {
		return rs, fmt.Errorf("holdfast: listing snapshots: %w", err)
	}
	if len(snaps) > 0 {
		rs.Configuration, rs.SnapshotIndex = snaps[0].Configuration, snaps[0].Index
		rs.LastIndex, rs.LastTerm = snaps[0].Index, snaps[0].Term
	}
	first, err := o.st.Logs.FirstIndex()
	if err != nil {
		return rs, err
	}
	last, err := o.st.Logs.LastIndex()
	if err != nil {
		return rs, err
	}
	for i := max(first, rs.SnapshotIndex+1); i <= last && i > 0; i++ {
		var l raft.Log
		if err := o.st.Logs.GetLog(i, &l); err != nil {
			return rs, fmt.Errorf("holdfast: raft log entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			rs.Configuration = raft.DecodeConfiguration(l.Data)
		}
		rs.LastIndex, rs.LastTerm = l.Index, l.Term
	}
	if rs.CurrentTerm, err = o.st.Stable.GetUint64([]byte("CurrentTerm")); err != nil && !isNotFound(err) {
		return rs, err
	}
	return rs, nil
}

// isNotFound reports a stable-store read of a key never set.
func isNotFound(err error) bool { return strings.Contains(err.Error(), "not found") }

// EachEntry calls fn with each entry of the raft log, in log order, and
// returns fn's first error.
func (o *Offline) EachEntry(fn func(*raft.Log) error) error {
	first, err := o.st.Logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := o.st.Logs.LastIndex()
	if err != nil {
		return err
	}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := o.st.Logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("holdfast: raft log entry %d: %w", i, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return nil
}

// Recover rewrites the raft configuration to servers, keeping the
// replicated state: hashicorp/raft's RecoverCluster restores the newest
// snapshot into fsm (a fresh state machine of the kind the node runs),
// applies every entry of the log after it (committed or not, since this
// node cannot know), and writes a snapshot of the result carrying the new
// configuration at the log's last index and term; the log is then
// compacted, and the node starts from that snapshot with its indexes,
// term and tokens where they were. servers must hold at least one voter.
func (o *Offline) Recover(servers []raft.Server, fsm raft.FSM) error {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(o.ID)
	conf.Logger = nil
	conf.LogOutput = io.Discard
	_, trans := raft.NewInmemTransport(raft.ServerAddress(o.ID))
	defer trans.Close()
	if err := raft.RecoverCluster(conf, fsm, o.st.Logs, o.st.Stable, o.st.Snapshots, trans, raft.Configuration{Servers: servers}); err != nil {
		return fmt.Errorf("holdfast: recovering %s: %w", o.Dir, err)
	}
	return nil
}

// ErrNotVoter is PlanRecovery's refusal of a data dir whose latest raft
// configuration does not list it as a voter: its log may lack entries the
// voters committed, so the cluster must not be recovered from it.
var ErrNotVoter = errors.New("not a voter's data dir")

// PlanRecovery returns the configuration a lost quorum is recovered to:
// the voters of rs.Configuration whose IDs are in keep (self alone when
// keep is empty), each with the address the configuration holds; the
// non-voters are dropped (the leader adds them back when they return).
// self, the data dir's node, must be a voter and be kept (ErrNotVoter
// otherwise), and so must every ID in keep; a configuration that already
// is the recovered one is refused too, as a mistake.
func PlanRecovery(rs RaftState, self string, keep []string) ([]raft.Server, error) {
	if len(keep) == 0 {
		keep = []string{self}
	}
	voters := map[string]raft.Server{}
	for _, s := range rs.Configuration.Servers {
		if s.Suffrage == raft.Voter {
			voters[string(s.ID)] = s
		}
	}
	if _, ok := voters[self]; !ok {
		return nil, fmt.Errorf("%w: its raft configuration (%s) does not list this node (%s) as a voter; recover from a surviving voter's data dir",
			ErrNotVoter, DescribeConfiguration(rs.Configuration), self)
	}
	var out []raft.Server
	seen := map[string]bool{}
	for _, id := range keep {
		s, ok := voters[id]
		switch {
		case seen[id]:
			continue
		case !ok:
			return nil, fmt.Errorf("holdfast: %s is not a voter of the configuration (%s)", id, DescribeConfiguration(rs.Configuration))
		}
		seen[id] = true
		out = append(out, s)
	}
	if !seen[self] {
		return nil, fmt.Errorf("holdfast: the survivors (%s) must include this data dir's node %s", strings.Join(keep, ", "), self)
	}
	if len(out) == len(rs.Configuration.Servers) {
		return nil, fmt.Errorf("holdfast: nothing to recover: the configuration already is %s", DescribeConfiguration(rs.Configuration))
	}
	return out, nil
}

// DescribeConfiguration is a configuration on one line: each server's ID
// and suffrage.
func DescribeConfiguration(c raft.Configuration) string {
	if len(c.Servers) == 0 {
		return "empty"
	}
	parts := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		suffrage := "voter"
		if s.Suffrage != raft.Voter {
			suffrage = "non-voter"
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.ID, suffrage))
	}
	return strings.Join(parts, ", ")
}
