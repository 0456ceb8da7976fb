package coordinator_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
)

// startOn starts (and closes) a coordinator named name on dataDir, on
// loopback ports, joining nobody; it returns New's error.
func startOn(t *testing.T, name, dataDir string, allowRename bool) error {
	t.Helper()
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = name
	cfg.GossipAddr, cfg.RPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = dataDir
	cfg.AllowRename = allowRename
	c, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	return nil
}

// TestDataDirRefusedUnderAnotherName checks that a data dir last used by
// one node name is refused under another (the error names the field to
// set and both names), accepted with AllowRename (after which the new name
// is the recorded one), and that a data dir from before names were
// recorded adopts the first name it starts under.
func TestDataDirRefusedUnderAnotherName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatal(err)
	}
	id, err := os.ReadFile(filepath.Join(dir, "node-id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatalf("same name again: %v", err)
	}
	err = startOn(t, "n2", dir, false)
	if !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Fatalf("another name: %v, want an error wrapping ErrInvalidConfig", err)
	}
	for _, want := range []string{"AllowRename", `"n1"`, `"n2"`, dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	t.Logf("refused: %v", err)

	if err := startOn(t, "n2", dir, true); err != nil {
		t.Fatalf("AllowRename: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "node-id")); string(after) != string(id) {
		t.Errorf("identity changed on rename: %q, was %q", after, id)
	}
	if err := startOn(t, "n1", dir, false); !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Errorf("old name after the rename: %v, want it refused", err)
	}

	// A data dir written before names were recorded has only node-id.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "node-id"), id, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "x1", old, false); err != nil {
		t.Fatalf("data dir without a recorded name: %v", err)
	}
	if err := startOn(t, "y1", old, false); !errors.Is(err, coordinator.ErrInvalidConfig) {
		t.Errorf("after adopting x1, y1: %v, want it refused", err)
	}
}

// TestDataDirInUseUnderTheSameName: while a node runs on a data dir, a second New on
// it fails at once with an error naming the dir (the dir is locked), and
// the first node keeps running; once it has closed, the dir starts again.
func TestDataDirInUseUnderTheSameName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.DataDir = "n1", dir
	first, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = startOn(t, "n1", dir, false)
	if err == nil || !strings.Contains(err.Error(), "another node") || !strings.Contains(err.Error(), dir) {
		t.Errorf("second node on a data dir in use: %v, want an error naming another node and %s", err, dir)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := startOn(t, "n1", dir, false); err != nil {
		t.Fatalf("the data dir after the first node closed: %v", err)
	}
}
