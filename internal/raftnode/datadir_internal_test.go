package raftnode

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaftWalDirIsRefused (finding 5): a data dir whose raft/wal holds the
// files of hashicorp/raft-wal (the log of earlier holdfast builds) is
// refused with an error naming a file of it, never opened as an empty log
// (a voter with no term, no vote and no entries would be an amnesiac).
func TestRaftWalDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "raft", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wal-meta.db", "00000000000000000001-0000000000000001.wal"} {
		if err := os.WriteFile(filepath.Join(wal, name), []byte("raft-wal bytes"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false })
	if err == nil {
		last, _ := st.logs.LastIndex()
		st.closer.Close()
		t.Fatalf("a raft-wal data dir opened, as a log ending at %d", last)
	}
	if !strings.Contains(err.Error(), "wal-meta.db") && !strings.Contains(err.Error(), ".wal") {
		t.Fatalf("the refusal does not name a raft-wal file: %v", err)
	}
}

// TestUnreadableBoltFileIsAnError (finding 5): raft/raft.db that cannot be
// examined (here a symbolic link loop: ELOOP; EACCES and EIO alike) is an
// error, never a reason to start a new, empty log beside it.
func TestUnreadableBoltFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	raftDir := filepath.Join(dir, "raft")
	if err := os.MkdirAll(raftDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(boltFile, filepath.Join(raftDir, boltFile)); err != nil {
		t.Fatal(err)
	}
	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false })
	if err == nil {
		st.closer.Close()
		t.Fatal("a data dir whose raft.db cannot be examined opened")
	}
	if !strings.Contains(err.Error(), boltFile) {
		t.Fatalf("the error does not name %s: %v", boltFile, err)
	}
}
