package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// writeDataDir makes a stopped voter's data dir: a write-ahead log of
// entries 1..60 in batches of 3 over small segments, term 4, a vote.
func writeDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := walog.Open(filepath.Join(dir, "raft", "wal"), walog.Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 60; i += 3 {
		var b []*raft.Log
		for j := i; j < i+3; j++ {
			b = append(b, &raft.Log{Index: j, Term: j/20 + 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%d", j))})
		}
		if err := l.StoreLogs(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatal(err)
	}
	l.SetUint64([]byte("LastVoteTerm"), 4)
	l.Set([]byte("LastVoteCand"), []byte("node-b"))
	l.Close()
	return dir
}

// TestDataCheck: a sound data dir is reported (format, entries, terms,
// segments, vote) with exit status 0; one with a bit flipped in the middle
// of its log exits 1 naming the file, the offset and the fix, and is left
// as it was; a missing one exits 1; a bad command line exits 2.
func TestDataCheck(t *testing.T) {
	dir := writeDataDir(t)
	code, out, errOut := ctl("data", "check", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("data check of a sound dir: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"format:\twalog", "log:\tentries 1..60, last term 4", "term:\t4 (voted for node-b in term 4)",
		"00000000000000000001.seg\tformat 2\tentries 1..", "problems:\tnone", "verdict:\tok"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = ctl("data", "check", "-json", dir)
	var r raftnode.DataReport
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Last != 60 || len(r.Segments) < 3 {
		t.Fatalf("data check -json: exit %d, %v, %+v", code, err, r)
	}

	seg := filepath.Join(dir, "raft", "wal", r.Segments[1].Name)
	b, _ := os.ReadFile(seg)
	at := bytes.Index(b, []byte("entry-"))
	b[at+3] ^= 2
	os.WriteFile(seg, b, 0o600)
	code, out, _ = ctl("data", "check", dir)
	if code != 1 {
		t.Fatalf("data check of a corrupt dir: exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{r.Segments[1].Name, "offset", "cannot be trusted", "NOT TRUSTWORTHY", "autopilot"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report of a corrupt dir lacks %q:\n%s", want, out)
		}
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, b) {
		t.Fatal("data check changed the corrupt segment")
	}
	if code, _, errOut := ctl("data", "check", filepath.Join(dir, "nothing")); code != 1 || !strings.Contains(errOut, "no raft data") {
		t.Fatalf("data check of a missing dir: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"data"}, {"data", "check"}, {"data", "check", "a", "b"}, {"data", "fix", dir}} {
		if code, _, _ := ctl(args...); code != 2 {
			t.Errorf("holdfastctl %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
	if code, out, _ := ctl("data", "help"); code != 0 || !strings.Contains(out, "data check") {
		t.Fatalf("data help: exit %d:\n%s", code, out)
	}
}
