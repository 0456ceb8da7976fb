package raftnode

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestOpenOfflineRefusals: an offline opening refuses a directory that is
// not a node's data dir (creating nothing in it) and a data dir a node has
// open (ErrDataDirLocked), and opens it once the node closed.
func TestOpenOfflineRefusals(t *testing.T) {
	empty := t.TempDir()
	if _, err := OpenOffline(empty); !errors.Is(err, ErrNotDataDir) {
		t.Errorf("empty dir: %v, want ErrNotDataDir", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) > 0 {
		t.Errorf("the refused opening created %v", entries)
	}
	dir := t.TempDir()
	if _, err := LoadIdentity(dir, "n1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenOffline(dir); !errors.Is(err, ErrNotDataDir) || !strings.Contains(err.Error(), "no raft state") {
		t.Errorf("identity without raft state: %v, want ErrNotDataDir", err)
	}
	st := openTestStores(t, dir) // a running node
	_, err := OpenOffline(dir)
	if !errors.Is(err, ErrDataDirLocked) || !strings.Contains(err.Error(), filepath.Join(dir, "raft", lockFile)) {
		t.Errorf("open data dir: %v, want ErrDataDirLocked naming the lock file", err)
	}
	st.closer.Close()
	o, err := OpenOffline(dir)
	if err != nil {
		t.Fatalf("stopped node's data dir: %v", err)
	}
	if o.Name != "n1" || len(o.ID) != 32 {
		t.Errorf("identity %q, name %q", o.ID, o.Name)
	}
	o.Close()
}

// TestPlanRecovery: the survivors kept are voters of the configuration
// with their addresses; a data dir that is not a voter's, a survivor that
// is not a voter, survivors without the data dir's node and a recovery to
// the same configuration are refused.
func TestPlanRecovery(t *testing.T) {
	rs := RaftState{Configuration: raft.Configuration{Servers: []raft.Server{
		{ID: "a", Address: "a@h1:1", Suffrage: raft.Voter}, {ID: "b", Address: "b@h2:1", Suffrage: raft.Voter},
		{ID: "c", Address: "c@h3:1", Suffrage: raft.Voter}, {ID: "n", Address: "n@h4:1", Suffrage: raft.Nonvoter},
	}}}
	got, err := PlanRecovery(rs, "a", nil)
	if err != nil || len(got) != 1 || got[0] != rs.Configuration.Servers[0] {
		t.Errorf("self alone: %v, %v", got, err)
	}
	if got, err = PlanRecovery(rs, "b", []string{"a", "b", "a"}); err != nil || len(got) != 2 || got[1].Address != "b@h2:1" {
		t.Errorf("two survivors: %v, %v", got, err)
	}
	for _, tc := range []struct {
		self string
		keep []string
		want string
	}{
		{"n", nil, "not a voter's data dir"},
		{"x", nil, "not a voter's data dir"},
		{"a", []string{"a", "n"}, "n is not a voter"},
		{"a", []string{"b"}, "must include this data dir's node a"},
	} {
		if _, err := PlanRecovery(rs, tc.self, tc.keep); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("self %s keep %v: %v, want %q", tc.self, tc.keep, err, tc.want)
		}
	}
	one := RaftState{Configuration: raft.Configuration{Servers: rs.Configuration.Servers[:1]}}
	if _, err := PlanRecovery(one, "a", nil); err == nil || !strings.Contains(err.Error(), "nothing to recover") {
		t.Errorf("already recovered: %v", err)
	}
}

// sumFSM adds up the 8-byte numbers of its commands: a state machine whose
// state shows whether every command was applied once.
type sumFSM struct {
	mu  sync.Mutex
	sum uint64
	n   int
}

func (f *sumFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sum += binary.BigEndian.Uint64(l.Data)
	f.n++
	return nil
}

func (f *sumFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sumSnap(f.sum), nil
}

func (f *sumFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	f.sum = binary.BigEndian.Uint64(b[:])
	f.mu.Unlock()
	return nil
}

type sumSnap uint64

func (s sumSnap) Persist(sink raft.SnapshotSink) error {
	_, err := sink.Write(binary.BigEndian.AppendUint64(nil, uint64(s)))
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (sumSnap) Release() {}

// TestRecoverKeepsStateAndLeadsAlone: a voter of three whose two peers are
// gone is recovered to itself alone: the state of every entry of its log is
// kept (in the new snapshot, at the log's last index and term), the
// configuration is the new one, and raft started on the data dir leads by
// itself and appends after the old last index.
func TestRecoverKeepsStateAndLeadsAlone(t *testing.T) {
	dir := t.TempDir()
	ident, err := LoadIdentity(dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{
		{ID: raft.ServerID(ident.ID), Address: raft.ServerAddress(ident.ID), Suffrage: raft.Voter},
		{ID: "b", Address: "b", Suffrage: raft.Voter}, {ID: "c", Address: "c", Suffrage: raft.Voter}}}
	st := openTestStores(t, dir)
	logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)}}
	var want uint64
	for i := uint64(2); i <= 40; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 3, Type: raft.LogCommand, Data: binary.BigEndian.AppendUint64(nil, i)})
		want += i
	}
	if err := st.logs.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := st.stable.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	st.closer.Close()

	o, err := OpenOffline(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := o.State()
	if err != nil || rs.LastIndex != 40 || rs.LastTerm != 3 || rs.CurrentTerm != 3 || len(rs.Configuration.Servers) != 3 {
		t.Fatalf("state before: %+v, %v", rs, err)
	}
	servers, err := PlanRecovery(rs, ident.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Recover(servers, &sumFSM{}); err != nil {
		t.Fatal(err)
	}
	if rs, err = o.State(); err != nil || rs.LastIndex != 40 || rs.SnapshotIndex != 40 || len(rs.Configuration.Servers) != 1 {
		t.Fatalf("state after: %+v, %v", rs, err)
	}
	o.Close()

	st = openTestStores(t, dir)
	defer st.closer.Close()
	f := &sumFSM{}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(ident.ID)
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	rc.LogOutput = io.Discard
	_, trans := raft.NewInmemTransport(raft.ServerAddress(ident.ID))
	r, err := raft.NewRaft(rc, f, st.logs, st.stable, st.snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatalf("the recovered node is %v after 10s, not leader", r.State())
		}
		time.Sleep(10 * time.Millisecond) // polling raft's state with a deadline
	}
	if err := r.Apply(binary.BigEndian.AppendUint64(nil, 1000), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sum != want+1000 {
		t.Errorf("state after recovery and one more command: %d, want %d", f.sum, want+1000)
	}
	if last := r.LastIndex(); last <= 40 {
		t.Errorf("last index %d after recovery: want past the old 40", last)
	}
}
