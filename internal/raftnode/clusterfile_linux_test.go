//go:build linux

package raftnode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestClusterFileFullDisk records a cluster on a real full disk (a 64 KiB
// tmpfs filled to the last byte): Record fails, the record in memory and on
// disk stays the previous one, and once space is free again it records.
// It needs root to mount the tmpfs; CI runs as root.
func TestClusterFileFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	f, err := OpenClusterFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Record(ClusterRecord{ID: "first"}); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "fill")
	w, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := w.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	w.Close()
	if err := f.Record(ClusterRecord{ID: "second"}); err == nil {
		t.Fatal("recorded on a full disk")
	}
	if f.ID() != "first" {
		t.Fatalf("in memory: %q", f.ID())
	}
	if g, err := OpenClusterFile(dir); err != nil || g.ID() != "first" {
		t.Fatalf("on disk after the failed write: %q, %v", g.ID(), err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := f.Record(ClusterRecord{ID: "second"}); err != nil {
		t.Fatalf("with space again: %v", err)
	}
	if g, err := OpenClusterFile(dir); err != nil || g.ID() != "second" {
		t.Fatalf("reopened: %q, %v", g.ID(), err)
	}
}
