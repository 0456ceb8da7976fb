package raftnode

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestStoresOpenLogsWrittenEitherWay: a raft log written by bbolt with its
// freelist synced (raft-boltdb's defaults, as before) opens with the
// node's stores (freelist not synced, a log cache in front), keeps its
// entries and takes new ones; and the file the node wrote opens again with
// the defaults.
func TestStoresOpenLogsWrittenEitherWay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft", "raft.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	old, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	logs := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
		}
		return out
	}
	if err := old.StoreLogs(logs(1, 100)); err != nil {
		t.Fatal(err)
	}
	if err := old.DeleteRange(1, 50); err != nil { // leave free pages behind
		t.Fatal(err)
	}
	old.Close()

	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.logs.StoreLogs(logs(101, 200)); err != nil {
		t.Fatal(err)
	}
	check := func(s raft.LogStore, what string) {
		t.Helper()
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		var l raft.Log
		if first != 51 || last != 200 || s.GetLog(75, &l) != nil || l.Data[0] != 75 {
			t.Fatalf("%s: entries %d..%d, entry 75 %v; want 51..200 and entry 75", what, first, last, l.Data)
		}
	}
	check(st.logs, "the node's stores")
	st.closer.Close()

	again, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	check(again, "raft-boltdb's defaults")
}

// testLogs returns entries from..to of term 1, each holding its index.
func testLogs(from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i), byte(i >> 8)}})
	}
	return out
}

func openTestStores(t *testing.T, dir string) *stores {
	t.Helper()
	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNewDataDirGetsWriteAheadLog: a new data dir gets the write-ahead log
// (no bbolt file), which keeps entries, compaction and the stable store
// across a reopen, and EachLogEntry reads it back in order.
func TestNewDataDirGetsWriteAheadLog(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadIdentity(dir, "n1", false); err != nil { // offline readers want a node's data dir
		t.Fatal(err)
	}
	st := openTestStores(t, dir)
	if err := st.logs.StoreLogs(testLogs(1, 300)); err != nil {
		t.Fatal(err)
	}
	if err := st.stable.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := st.logs.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	if err := st.closer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", boltFile)); !os.IsNotExist(err) {
		t.Fatalf("a new data dir has a bbolt log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", walDir)); err != nil {
		t.Fatalf("a new data dir has no write-ahead log: %v", err)
	}

	st = openTestStores(t, dir)
	first, _ := st.logs.FirstIndex()
	last, _ := st.logs.LastIndex()
	term, err := st.stable.GetUint64([]byte("CurrentTerm"))
	var l raft.Log
	// Compaction deletes whole segments; one partly compacted stays, so the
	// reopened log may start earlier, never later.
	if first < 1 || first > 101 || last != 300 || err != nil || term != 7 || st.logs.GetLog(200, &l) != nil || l.Data[0] != 200 {
		t.Fatalf("reopened: entries %d..%d, term %d (%v), entry 200 %v; want from 101 or earlier to 300, term 7", first, last, term, err, l.Data)
	}
	if err := st.logs.StoreLogs(testLogs(301, 310)); err != nil {
		t.Fatal(err)
	}
	if err := st.closer.Close(); err != nil {
		t.Fatal(err)
	}

	want := first
	err = EachLogEntry(dir, func(l *raft.Log) error {
		if l.Index != want || l.Data[0] != byte(want) {
			t.Fatalf("EachLogEntry gave entry %d (%v), want %d", l.Index, l.Data, want)
		}
		want++
		return nil
	})
	if err != nil || want != 311 {
		t.Fatalf("EachLogEntry: %v, stopped before %d, want 311", err, want)
	}
	if err := EachLogEntry(t.TempDir(), func(*raft.Log) error { return nil }); err == nil {
		t.Fatal("EachLogEntry read a raft log in an empty dir")
	}
}

// TestDataDirLockedWhileOpen: while one node's stores are open on a data
// dir, a second opening fails at once naming the cause, with either log;
// once the first closes, the dir opens again.
func TestDataDirLockedWhileOpen(t *testing.T) {
	bolt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bolt, "raft"), 0o700); err != nil {
		t.Fatal(err)
	}
	old, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(bolt, "raft", boltFile)})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	for name, dir := range map[string]string{"write-ahead log": t.TempDir(), "bbolt log": bolt} {
		first := openTestStores(t, dir)
		_, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
		if err == nil || !strings.Contains(err.Error(), "another node") {
			t.Fatalf("%s: second open: %v, want an error naming another node", name, err)
		}
		if err := first.closer.Close(); err != nil {
			t.Fatal(err)
		}
		again := openTestStores(t, dir)
		if err := again.closer.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
