package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// TestUntrustedDataDirRefused: a node whose -data dir holds a raft log
// damaged in the middle does not start: the ledger exits 1 with holdfast's
// error, which names the segment and the offset and says how to check the
// data dir and what to do.
func TestUntrustedDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	wal := filepath.Join(data, "raft", "wal")
	l, err := walog.Open(wal, walog.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 40; i += 4 {
		var b []*raft.Log
		for j := i; j < i+4; j++ {
			b = append(b, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%d", j))})
		}
		if err := l.StoreLogs(b); err != nil {
			t.Fatal(err)
		}
	}
	l.SetUint64([]byte("CurrentTerm"), 1)
	l.Close()
	seg := filepath.Join(wal, "00000000000000000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte("entry-9"))+2] ^= 1
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-node", "n1", "-db", filepath.Join(dir, "ledger.db"), "-data", data, "-ttl", "2s", "-insecure"}
	code := run(args, &stdout, &stderr)
	for _, want := range []string{"cannot be trusted", "00000000000000000001.seg", "offset", "holdfastctl data check " + data, "autopilot"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}
	t.Logf("the ledger's refusal: %s", strings.TrimSpace(stderr.String()[strings.LastIndex(stderr.String(), "ledger: "):]))
	if code != 1 || t.Failed() {
		t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr.String())
	}
}
