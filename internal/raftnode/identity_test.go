package raftnode

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/storetest"
	"github.com/holdfast-go/holdfast/internal/walog"
)

func readName(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, nameFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestIdentityKeptAcrossRestarts: the first start creates an identity and
// records the name; later starts under that name find the same identity.
func TestIdentityKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadIdentity(dir, "n1", false)
	if err != nil || !first.Fresh || len(first.ID) != 32 {
		t.Fatalf("first start: %+v, %v", first, err)
	}
	again, err := LoadIdentity(dir, "n1", false)
	if err != nil || again.Fresh || again.ID != first.ID || again.RenamedFrom != "" {
		t.Fatalf("restart: %+v, %v; want identity %s, not fresh", again, err, first.ID)
	}
	if got := readName(t, dir); got != "n1" {
		t.Fatalf("recorded name %q", got)
	}
}

// TestRenameRefusedUnlessAllowed: a data dir last used under another name
// is refused (and left as it was) unless allowRename, which keeps the
// identity and records the new name.
func TestRenameRefusedUnlessAllowed(t *testing.T) {
	dir := t.TempDir()
	orig, err := LoadIdentity(dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadIdentity(dir, "n2", false)
	var re *RenameError
	if !errors.As(err, &re) || re.Name != "n2" || re.Previous != "n1" || re.DataDir != dir {
		t.Fatalf("start as n2: %v, want a RenameError naming n2, n1 and the dir", err)
	}
	if got := readName(t, dir); got != "n1" {
		t.Fatalf("a refused rename recorded %q", got)
	}
	renamed, err := LoadIdentity(dir, "n2", true)
	if err != nil || renamed.ID != orig.ID || renamed.RenamedFrom != "n1" || renamed.Fresh {
		t.Fatalf("rename allowed: %+v, %v; want identity %s renamed from n1", renamed, err, orig.ID)
	}
	if got := readName(t, dir); got != "n2" {
		t.Fatalf("after the rename the dir records %q", got)
	}
	if _, err := LoadIdentity(dir, "n1", false); !errors.As(err, &re) {
		t.Fatalf("the old name after a rename: %v, want a RenameError", err)
	}
}

// TestWipedDirIsNewIdentity: a node that lost its data dir is a new server
// to raft, even under its old name; so is every start without a data dir.
func TestWipedDirIsNewIdentity(t *testing.T) {
	dir := t.TempDir()
	orig, err := LoadIdentity(dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	wiped, err := LoadIdentity(dir, "n1", false)
	if err != nil || !wiped.Fresh || wiped.ID == orig.ID {
		t.Fatalf("after wiping: %+v, %v; want a fresh identity other than %s", wiped, err, orig.ID)
	}
	a, _ := LoadIdentity("", "n1", false)
	b, _ := LoadIdentity("", "n1", false)
	if !a.Fresh || !b.Fresh || a.ID == b.ID {
		t.Fatalf("without a data dir: %+v then %+v; want two fresh identities", a, b)
	}
}

// TestIdentityEdgeCases: a dir from before the name was recorded adopts
// the name; a damaged identity file is an error, not a new identity.
func TestIdentityEdgeCases(t *testing.T) {
	dir := t.TempDir()
	orig, err := LoadIdentity(dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, nameFile)); err != nil {
		t.Fatal(err)
	}
	old, err := LoadIdentity(dir, "n9", false)
	if err != nil || old.ID != orig.ID || readName(t, dir) != "n9" {
		t.Fatalf("a dir without a name: %+v, %v (name %q)", old, err, readName(t, dir))
	}
	if err := os.WriteFile(filepath.Join(dir, identityFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if id, err := LoadIdentity(dir, "n9", false); err == nil {
		t.Fatalf("a damaged identity file was accepted: %+v", id)
	}
}

// TestDataDirOutlivesACrashBeforeItsDirectorySync: a node that dies after
// renaming its cluster record into place and before syncing the data dir
// leaves the rename in the page cache alone. The next start reads that
// record and runs with it (its first gossip and raft words name the
// cluster), and writes nothing itself, so it must sync the data dir before
// it goes on: a power cut after that start keeps the record, and the
// identity.
func TestDataDirOutlivesACrashBeforeItsDirectorySync(t *testing.T) {
	const dir = "/data/n1"
	mem := storetest.NewMemFS(0)
	first, err := loadIdentity(mem, dir, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	dying := storetest.NewFaultFS(mem)
	renamed := false
	errDied := errors.New("the process died")
	dying.SetRule(func(c storetest.Call) error {
		switch {
		case renamed:
			return errDied // nothing more reaches the file system
		case c.Op == storetest.OpRename && strings.HasSuffix(c.Path, clusterFileName+".tmp"):
			renamed = true
		}
		return nil
	})
	f, err := openClusterFile(dying, dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := ClusterRecord{ID: "c1", Incarnation: 7}
	if err := f.Record(rec); !errors.Is(err, errDied) {
		t.Fatalf("recording the cluster: %v, want the process to die after the rename", err)
	}
	start := func(fsys walog.FS, what string) {
		t.Helper()
		id, err := loadIdentity(fsys, dir, "n1", false)
		if err != nil || id.Fresh || id.ID != first.ID {
			t.Fatalf("%s: identity %+v, %v; want %s", what, id, err, first.ID)
		}
		f, err := openClusterFile(fsys, dir)
		if err != nil || f.Get() != rec {
			t.Fatalf("%s: cluster record %+v, %v; want %+v", what, f.Get(), err, rec)
		}
	}
	start(mem, "the start after the crash") // what the page cache kept
	start(mem.Crash(rand.New(rand.NewPCG(1, 2)), storetest.DropUnsynced), "the start after a power cut after it")
}
