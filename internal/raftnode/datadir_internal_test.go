package raftnode

import (
	"bytes"
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
	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
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
	st, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
	if err == nil {
		st.closer.Close()
		t.Fatal("a data dir whose raft.db cannot be examined opened")
	}
	if !strings.Contains(err.Error(), boltFile) {
		t.Fatalf("the error does not name %s: %v", boltFile, err)
	}
}

// TestUntrustedDataDirRefusedWithTheFix: a data dir whose raft log is
// corrupt in the middle is refused when the node opens it, with an error
// that names the file and says what to do (check it offline; restore it,
// or replace the node); the refusal changes nothing on disk.
func TestUntrustedDataDirRefusedWithTheFix(t *testing.T) {
	dir := t.TempDir()
	st := openTestStores(t, dir)
	for i := uint64(1); i <= 100; i += 5 {
		if err := st.logs.StoreLogs(testLogs(i, i+4)); err != nil {
			t.Fatal(err)
		}
	}
	st.closer.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "raft", walDir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("%d segments", len(segs))
	}
	b, _ := os.ReadFile(segs[0])
	b[1000] ^= 0x40 // inside the records (about 40 bytes each): later batches follow
	before := append([]byte(nil), b...)
	os.WriteFile(segs[0], b, 0o600)
	_, err := openStores(dir, slog.New(slog.DiscardHandler), func() bool { return false }, storeOptions{})
	if err == nil {
		t.Fatal("a corrupt raft log opened")
	}
	for _, want := range []string{"cannot be trusted", filepath.Base(segs[0]), "holdfastctl data check " + dir, "autopilot", "restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if after, _ := os.ReadFile(segs[0]); !bytes.Equal(after, before) {
		t.Fatal("the refused open changed the segment")
	}
}
