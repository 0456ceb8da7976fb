package raftnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterFile: a data dir without a record belongs to no cluster; a
// record survives a reopen; an unreadable record is refused with the way
// out; without a data dir the record lives in memory.
func TestClusterFile(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenClusterFile(dir)
	if err != nil || f.ID() != "" {
		t.Fatalf("fresh: %q, %v", f.ID(), err)
	}
	if err := f.Record(ClusterRecord{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Record(ClusterRecord{ID: "c1", Incarnation: 1_771_000_000_000_000}); err != nil {
		t.Fatal(err)
	}
	g, err := OpenClusterFile(dir)
	if err != nil || g.Get() != (ClusterRecord{ID: "c1", Incarnation: 1_771_000_000_000_000}) {
		t.Fatalf("reopened: %+v, %v", g.Get(), err)
	}
	for _, bad := range []string{"{", `{"cluster_id":""}`, `{"cluster_id":"x","incarnation":-1}`, "c1\n"} {
		if err := os.WriteFile(filepath.Join(dir, clusterFileName), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenClusterFile(dir); err == nil || !strings.Contains(err.Error(), "remove it") {
			t.Fatalf("record %q: %v", bad, err)
		}
	}
	m, err := OpenClusterFile("")
	if err != nil || m.Record(ClusterRecord{ID: "c2"}) != nil || m.ID() != "c2" {
		t.Fatalf("in memory: %q, %v", m.ID(), err)
	}
}

// TestLeaveCluster: leaving the data dir's cluster moves its raft state,
// identity, record and the host's files aside, so the next start is a new
// node; naming another cluster, or a data dir of none, moves nothing; a
// node running on the data dir makes it fail.
func TestLeaveCluster(t *testing.T) {
	dir := t.TempDir()
	id, err := LoadIdentity(dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "raft", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyring.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	if moved, err := LeaveCluster(dir, "c1", now, "keyring.json"); moved != "" || err != nil {
		t.Fatalf("a data dir of no cluster: %q, %v", moved, err)
	}
	f, _ := OpenClusterFile(dir)
	if err := f.Record(ClusterRecord{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if moved, err := LeaveCluster(dir, "other", now); moved != "" || err != nil {
		t.Fatalf("another cluster named: %q, %v", moved, err)
	}
	lock, err := lockDir(filepath.Join(dir, "raft"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LeaveCluster(dir, "c1", now); err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("while locked: %v", err)
	}
	lock.Close()
	moved, err := LeaveCluster(dir, "c1", now, "keyring.json")
	if err != nil || moved != filepath.Join(dir, "left-c1-20260203T040506Z") {
		t.Fatalf("leave: %q, %v", moved, err)
	}
	for _, name := range []string{"raft", identityFile, clusterFileName, "keyring.json"} {
		if _, err := os.Stat(filepath.Join(moved, name)); err != nil {
			t.Errorf("%s not moved: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still in the data dir: %v", name, err)
		}
	}
	again, err := LoadIdentity(dir, "n1", false)
	if err != nil || !again.Fresh || again.ID == id.ID {
		t.Fatalf("after leaving: %+v, %v; want a new identity", again, err)
	}
	if f, err := OpenClusterFile(dir); err != nil || f.ID() != "" {
		t.Fatalf("after leaving the record says %q, %v", f.ID(), err)
	}
	if moved, err := LeaveCluster(dir, "c1", now); moved != "" || err != nil {
		t.Fatalf("leaving again: %q, %v", moved, err)
	}
}
