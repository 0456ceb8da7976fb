package walog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// copyFormat1 copies testdata/format1 into a new directory: a log written
// by the format-1 code (commit 71b243a: headerless segments, a stable file
// without a checksum): entries 1..40 of term i/10+1 over two segments, the
// second preallocated, compacted up to 10, term 7, a vote for node-7.
func copyFormat1(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	names, err := os.ReadDir("testdata/format1")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		writeFile(t, filepath.Join(dir, n.Name()), readFile(t, filepath.Join("testdata/format1", n.Name())))
	}
	return dir
}

// wantFormat1 checks the entries of the format-1 log from first to last.
func wantFormat1(t *testing.T, l *Log, last uint64) {
	t.Helper()
	first, _ := l.FirstIndex()
	if got, _ := l.LastIndex(); got != last || first < 1 || first > 11 {
		t.Fatalf("the log holds %d..%d, want from 11 or earlier to %d", first, got, last)
	}
	for i := first; i <= min(last, 40); i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil || string(e.Data) != fmt.Sprintf("v1-entry-%d", i) || e.Term != i/10+1 {
			t.Fatalf("entry %d: %q term %d (%v)", i, e.Data, e.Term, err)
		}
	}
	term, err := l.GetUint64([]byte("CurrentTerm"))
	cand, err2 := l.Get([]byte("LastVoteCand"))
	if term != 7 || err != nil || string(cand) != "node-7" || err2 != nil {
		t.Fatalf("term %d (%v), vote %q (%v); want 7 and node-7", term, err, cand, err2)
	}
}

// TestFormat1DirIsUpgraded: a data dir of the earlier format is read as it
// is (a read-only open changes nothing and lists the upgrade), then
// upgraded on a writable open: the state file takes the term and the vote,
// the old segments stay and are read in their format, new entries go to
// new segments, and compaction and suffix deletion work across both.
func TestFormat1DirIsUpgraded(t *testing.T) {
	dir := copyFormat1(t)
	before := readFile(t, filepath.Join(dir, "00000000000000000002.seg"))
	ro, err := Open(dir, Options{SegmentSize: 1000, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	wantFormat1(t, ro, 40)
	if len(ro.Repairs()) == 0 {
		t.Fatal("a read-only open of a format-1 log lists no upgrade")
	}
	if err := ro.StoreLogs(marked(41, 41, 5, 10)); err == nil {
		t.Fatal("a read-only log took an append")
	}
	ro.Close()
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !missing(err) {
		t.Fatalf("a read-only open wrote the state file: %v", err)
	}
	if !bytes.Equal(before, readFile(t, filepath.Join(dir, "00000000000000000002.seg"))) {
		t.Fatal("a read-only open changed a segment")
	}

	l := open(t, dir, 1000)
	wantFormat1(t, l, 40)
	if _, err := os.Stat(filepath.Join(dir, v1StableFile)); !missing(err) {
		t.Fatalf("the format-1 stable file is still there after the upgrade: %v", err)
	}
	storeBatches(t, l, marked(41, 80, 5, 30), 4)
	if err := l.DeleteRange(75, 80); err != nil {
		t.Fatal(err)
	}
	storeBatches(t, l, marked(75, 78, 6, 30), 2)
	l.Close()
	l = open(t, dir, 1000)
	wantFormat1(t, l, 78)
	var e raft.Log
	if err := l.GetLog(76, &e); err != nil || e.Term != 6 {
		t.Fatalf("entry 76 after the suffix was replaced: term %d (%v), want 6", e.Term, err)
	}
	if err := l.DeleteRange(1, 60); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir, 1000)
	if first, _ := l.FirstIndex(); first < 11 || first > 61 {
		t.Fatalf("after compacting to 60 the log starts at %d", first)
	}
	if err := l.DeleteRange(20, 78); err == nil {
		if last, _ := l.LastIndex(); last != 19 && last != 0 {
			t.Fatalf("a suffix deletion into the format-1 segments left the log ending at %d", last)
		}
	}
}

// TestFormat1TornTailAndCorruption: in a format-1 log a torn last record
// is cut (a copy kept); a bad record in its first segment is refused.
func TestFormat1TornTailAndCorruption(t *testing.T) {
	dir := copyFormat1(t)
	seg := filepath.Join(dir, "00000000000000000002.seg")
	b := readFile(t, seg)
	at := bytes.Index(b, []byte("v1-entry-40"))
	writeFile(t, seg, b[:at+4])
	l := open(t, dir, 1000)
	wantFormat1(t, l, 39)
	if _, err := os.Stat(seg + ".broken"); err != nil {
		t.Fatalf("no copy kept of the cut segment: %v", err)
	}
	l.Close()

	dir = copyFormat1(t)
	seg = filepath.Join(dir, "00000000000000000001.seg")
	b = readFile(t, seg)
	b[bytes.Index(b, []byte("v1-entry-5"))+3] ^= 1
	writeFile(t, seg, b)
	if l, err := Open(dir, Options{SegmentSize: 1000}); err == nil {
		l.Close()
		t.Fatal("a format-1 log with entry 5 corrupt opened")
	}
}
