package raftnode

import (
	"log/slog"
	"os"
	"path/filepath"
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

	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false })
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
