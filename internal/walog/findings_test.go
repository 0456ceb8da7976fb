package walog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/disktest"
)

// These tests reproduce the five ways an adversarial review of the log
// broke its rule (an acknowledged entry stays, an unacknowledged or
// deleted one never comes back), each through the files and calls a real
// disk offers. They use only Open, the raft store methods and the files.

// marked returns entries from..to of term, each holding "entry-<i>-<term>"
// padded to size bytes, so that a test finds an entry's record in a file.
func marked(from, to, term uint64, size int) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		d := []byte(fmt.Sprintf("entry-%04d-%d|", i, term))
		d = append(d, bytes.Repeat([]byte{'.'}, max(0, size-len(d)))...)
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: d})
	}
	return out
}

// storeBatches appends logs in batches of n.
func storeBatches(t *testing.T, l *Log, logs []*raft.Log, n int) {
	t.Helper()
	for i := 0; i < len(logs); i += n {
		if err := l.StoreLogs(logs[i:min(i+n, len(logs))]); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBitFlipMidLogRefusesToOpen (finding 1): one bit flipped in entry 10
// of 100 is corruption, not a torn write (later batches were written after
// it was synced). Open refuses, naming the file and the offset, and
// changes nothing on disk; with the bit flipped back the log opens whole.
func TestBitFlipMidLogRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 1<<20)
	storeBatches(t, l, marked(1, 100, 1, 40), 5)
	l.Close()
	segs := segFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	b := readFile(t, segs[0])
	at := bytes.Index(b, []byte("entry-0010-"))
	if at < 0 {
		t.Fatal("entry 10 not found in the segment")
	}
	b[at+2] ^= 0x10
	writeFile(t, segs[0], b)

	got, err := Open(dir, Options{SegmentSize: 1 << 20})
	if err == nil {
		last, _ := got.LastIndex()
		got.Close()
		t.Fatalf("a log with entry 10 of 100 corrupt opened, ending at %d", last)
	}
	if !strings.Contains(err.Error(), filepath.Base(segs[0])) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("the refusal does not name the file and the offset: %v", err)
	}
	if after := readFile(t, segs[0]); !bytes.Equal(after, b) {
		t.Fatal("the refused open changed the segment")
	}
	b[at+2] ^= 0x10
	writeFile(t, segs[0], b)
	l = open(t, dir, 1<<20)
	if last, _ := l.LastIndex(); last != 100 {
		t.Fatalf("with the bit flipped back the log ends at %d, want 100", last)
	}
}

// TestMissingSegmentRefusesToOpen (finding 2): a segment lost before the
// last one is a hole in the log, never a torn write: Open refuses naming
// the missing segment, and the last segment is left as it was.
func TestMissingSegmentRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 300)
	storeBatches(t, l, marked(1, 60, 1, 40), 3)
	l.Close()
	segs := segFiles(t, dir)
	if len(segs) < 4 {
		t.Fatalf("%d segments, want at least 4", len(segs))
	}
	lastBefore := readFile(t, segs[len(segs)-1])
	missing := segs[len(segs)-2]
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	got, err := Open(dir, Options{SegmentSize: 300})
	if err == nil {
		last, _ := got.LastIndex()
		got.Close()
		t.Fatalf("a log missing %s opened, ending at %d", filepath.Base(missing), last)
	}
	if !strings.Contains(err.Error(), filepath.Base(missing)) {
		t.Fatalf("the refusal does not name the missing segment %s: %v", filepath.Base(missing), err)
	}
	if after := readFile(t, segs[len(segs)-1]); !bytes.Equal(after, lastBefore) {
		t.Fatal("the refused open changed the last segment")
	}
}

// TestFailedWriteOnFullDiskNeverComesBack (finding 3): on a nearly full
// file system a batch fails with ENOSPC after writing part of itself. The
// failed batch must leave nothing behind: after raft writes entries 6-7
// again at a newer term, a restart shows a log ending at 7 with both at the
// new term, never an old-term entry 8 after them (the last log term would
// go backwards). Needs root for a small tmpfs.
func TestFailedWriteOnFullDiskNeverComesBack(t *testing.T) {
	dir := filepath.Join(disktest.Tmpfs(t, 128<<10), "wal")
	const seg = 48 << 10
	l := open(t, dir, seg)
	storeBatches(t, l, marked(1, 5, 1, 100), 5)
	err := l.StoreLogs(marked(6, 40, 1, 4000))
	if err == nil {
		t.Fatal("a 140 KiB batch fit a 128 KiB file system")
	}
	if !errors.Is(err, disktest.ENOSPC) {
		t.Fatalf("the batch failed with %v, want ENOSPC", err)
	}
	if last, _ := l.LastIndex(); last != 5 {
		t.Fatalf("after the failed batch the log ends at %d, want 5", last)
	}
	if err := l.StoreLogs(marked(6, 7, 2, 4000)); err != nil {
		t.Fatalf("entries 6-7 at term 2 after the failed batch: %v", err)
	}
	l.Close()
	l = open(t, dir, seg)
	last, _ := l.LastIndex()
	var prev uint64
	for i := uint64(1); i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if e.Term < prev {
			t.Fatalf("entry %d has term %d after term %d: the last log term went backwards", i, e.Term, prev)
		}
		prev = e.Term
	}
	if last != 7 {
		t.Fatalf("after a restart the log ends at %d, want 7: the failed batch came back", last)
	}
}

// TestFailedSuffixTruncationKeepsMemoryAndDiskAgreeing (finding 4): a
// suffix deletion the disk refuses (the segment made immutable) must leave
// the log exactly as before or make every later write fail; it must never
// report entries gone that are still on disk, to bring them back after
// the next append and a restart. Needs root and a file system with
// immutable files (chattr +i).
func TestFailedSuffixTruncationKeepsMemoryAndDiskAgreeing(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 1<<20)
	storeBatches(t, l, marked(1, 20, 1, 40), 5)
	seg := segFiles(t, dir)[0]
	undo := disktest.Immutable(t, seg)
	delErr := l.DeleteRange(15, 20)
	undo()
	if delErr == nil {
		t.Fatal("a suffix deletion on an immutable segment succeeded")
	}
	last, _ := l.LastIndex()
	storeErr := l.StoreLogs(marked(15, 15, 2, 40))
	switch {
	case storeErr != nil:
		// Every later write fails: fine, as long as a restart shows the log
		// as it was or as deleted.
	case last != 14:
		t.Fatalf("the failed deletion left the log at %d, yet entry 15 was taken after it", last)
	}
	l.Close()
	l = open(t, dir, 1<<20)
	last, _ = l.LastIndex()
	if storeErr == nil && last != 15 {
		t.Fatalf("after entry 15 of term 2 was stored and a restart, the log ends at %d: the deleted entries came back", last)
	}
	for i := uint64(1); i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if i < last && e.Term > 1 {
			t.Fatalf("entry %d has term %d before the end", i, e.Term)
		}
	}
}

// TestGarbledLengthAllocatesBoundedMemory (finding 5): a length field
// garbled to almost 1 GiB is not allocated on open.
func TestGarbledLengthAllocatesBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 1<<20)
	storeBatches(t, l, marked(1, 20, 1, 40), 5)
	l.Close()
	seg := segFiles(t, dir)[0]
	b := readFile(t, seg)
	at := bytes.Index(b, []byte("entry-0020-"))
	// The length field is the first 4 bytes of the record: search back for
	// the record that holds entry 20 (8-byte header, 25 bytes of fixed
	// fields, a 1-byte uvarint length).
	rec := at - 8 - 25 - 1
	b[rec], b[rec+1], b[rec+2], b[rec+3] = 0xf0, 0xff, 0xff, 0x3f
	writeFile(t, seg, b)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := Open(dir, Options{SegmentSize: 1 << 20})
	runtime.ReadMemStats(&after)
	if err == nil {
		got.Close()
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Fatalf("Open allocated %d MiB for a 1 MiB segment with a garbled length", n>>20)
	}
}

// TestCorruptStableStoreNeverReadsAWrongTerm (finding 5): a bit flipped
// anywhere in the files that hold the term and the vote either is
// repaired from a second copy or refuses the open; it never reads back a
// term or a vote other than the one last set.
func TestCorruptStableStoreNeverReadsAWrongTerm(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 1<<20)
	if err := l.SetUint64([]byte("CurrentTerm"), 0x2a2a); err != nil {
		t.Fatal(err)
	}
	if err := l.Set([]byte("LastVoteCand"), []byte("node-7")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	var files []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".seg") && !e.IsDir() {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		t.Fatal("no stable store file")
	}
	origs := map[string][]byte{}
	for _, path := range files {
		origs[path] = readFile(t, path)
	}
	flips, refused := 0, 0
	for _, path := range files {
		for off := range origs[path] {
			if off%4096 >= 256 && off%61 != 0 {
				continue // the unused end of a slot: a sample of it
			}
			for _, bit := range []byte{0x01, 0x80} {
				// A repairing open may rewrite the files: start each flip
				// from the original bytes of every one.
				for p, b := range origs {
					writeFile(t, p, b)
				}
				b := bytes.Clone(origs[path])
				b[off] ^= bit
				writeFile(t, path, b)
				flips++
				got, err := Open(dir, Options{SegmentSize: 1 << 20})
				if err != nil {
					refused++
					continue
				}
				term, err1 := got.GetUint64([]byte("CurrentTerm"))
				cand, err2 := got.Get([]byte("LastVoteCand"))
				got.Close()
				if term != 0x2a2a || string(cand) != "node-7" || err1 != nil || err2 != nil {
					t.Fatalf("%s: bit %#x of byte %d flipped: term %#x (%v), vote %q (%v); want 0x2a2a and node-7 or a refusal",
						filepath.Base(path), bit, off, term, err1, cand, err2)
				}
			}
		}
	}
	t.Logf("%d bit flips in %d file(s): %d refused, the rest read the right term and vote", flips, len(files), refused)
}

// TestFailedRemovalIsRetried (finding 5): a compaction whose removal of a
// segment fails (the file made immutable) leaves every entry the log
// reports readable, and the next compaction removes what the failed one
// left. Needs root and chattr +i.
func TestFailedRemovalIsRetried(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 300)
	storeBatches(t, l, marked(1, 60, 1, 40), 3)
	segs := segFiles(t, dir)
	undo := disktest.Immutable(t, segs[1])
	err := l.DeleteRange(1, 40)
	undo()
	t.Logf("compaction with the second segment immutable: %v", err)
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	if last != 60 || first < 1 || first > 41 {
		t.Fatalf("after the compaction the log holds %d..%d, want from 41 or earlier to 60", first, last)
	}
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil {
			t.Fatalf("entry %d of %d..%d: %v", i, first, last, err)
		}
	}
	if err := l.DeleteRange(first, 45); err != nil {
		t.Fatalf("the compaction after the failed one: %v", err)
	}
	if err := l.StoreLogs(marked(61, 63, 1, 40)); err != nil {
		t.Fatalf("appending after the compactions: %v", err)
	}
	l.Close()
	l = open(t, dir, 300)
	first, _ = l.FirstIndex()
	if last, _ := l.LastIndex(); last != 63 || first > 46 {
		t.Fatalf("reopened: the log holds %d..%d, want from 46 or earlier to 63", first, last)
	}
	if first < 30 {
		t.Fatalf("reopened: the log starts at %d: the segments the compactions removed are back", first)
	}
}
