package walog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// entries returns entries from..to; entry i holds i in its data (and some
// length, so that small segments rotate), with term i/10+1.
func entries(from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, entry(i, 0))
	}
	return out
}

func entry(i uint64, salt byte) *raft.Log {
	data := bytes.Repeat([]byte{byte(i), salt}, int(i%7)+1)
	l := &raft.Log{Index: i, Term: i/10 + 1, Type: raft.LogCommand, Data: data,
		AppendedAt: time.Unix(1700000000, int64(i))}
	if i%5 == 0 {
		l.Extensions = []byte("ext")
		l.Type = raft.LogConfiguration
	}
	return l
}

func open(t *testing.T, dir string, seg int64) *Log {
	t.Helper()
	l, err := Open(dir, Options{SegmentSize: seg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// store appends from..to in batches of five, as raft appends a few at a
// time (a segment rotates only between batches).
func store(t *testing.T, l *Log, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i += 5 {
		if err := l.StoreLogs(entries(i, min(i+4, to))); err != nil {
			t.Fatal(err)
		}
	}
}

// wantRange checks the log holds exactly first..last, each entry as
// entries() makes it (or with salt for indexes from saltFrom on).
func wantRange(t *testing.T, l *Log, first, last uint64) {
	t.Helper()
	f, _ := l.FirstIndex()
	la, _ := l.LastIndex()
	if f != first || la != last {
		t.Fatalf("log holds %d..%d, want %d..%d", f, la, first, last)
	}
	for i := first; i <= last && i > 0; i++ {
		var got raft.Log
		if err := l.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		sameEntry(t, &got, entry(i, 0))
	}
	var got raft.Log
	for _, i := range []uint64{first - 1, last + 1} {
		if err := l.GetLog(i, &got); i > 0 && !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("entry %d outside the log: %v, want ErrLogNotFound", i, err)
		}
	}
}

func sameEntry(t *testing.T, got, want *raft.Log) {
	t.Helper()
	if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
		!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) ||
		!got.AppendedAt.Equal(want.AppendedAt) {
		t.Fatalf("entry %d: got %+v, want %+v", want.Index, got, want)
	}
}

func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestAppendReadReopen: entries appended in batches across many small
// segments read back the same, before and after a reopen; a batch that
// does not follow the last entry is refused.
func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 200)
	wantRange(t, l, 0, 0)
	store(t, l, 1, 1)
	if err := l.StoreLogs(entries(2, 40)); err != nil {
		t.Fatal(err)
	}
	for i := uint64(41); i <= 100; i++ {
		if err := l.StoreLog(entry(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	wantRange(t, l, 1, 100)
	if n := len(segFiles(t, dir)); n < 5 {
		t.Fatalf("%d segments for 100 entries of 200-byte segments", n)
	}
	for _, bad := range [][]*raft.Log{entries(102, 103), entries(100, 101), {entry(101, 0), entry(103, 0)}} {
		if err := l.StoreLogs(bad); err == nil {
			t.Fatalf("entries %d.. stored after 100", bad[0].Index)
		}
	}
	l.Close()
	if err := l.StoreLog(entry(101, 0)); err == nil {
		t.Fatal("StoreLog after Close succeeded")
	}
	l = open(t, dir, 200)
	wantRange(t, l, 1, 100)
	store(t, l, 101, 120)
	wantRange(t, l, 1, 120)
}

// TestDeleteRange: a prefix removes the segments it covers (a partly
// covered one stays on disk, so a reopened log may start earlier); a suffix
// is gone from disk at once and appends continue after it; deleting all
// lets the next append start anywhere.
func TestDeleteRange(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 200)
	store(t, l, 1, 100)
	before := len(segFiles(t, dir))
	if err := l.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	wantRange(t, l, 51, 100)
	if after := len(segFiles(t, dir)); after >= before {
		t.Fatalf("segments %d -> %d after compacting half the log", before, after)
	}
	if err := l.DeleteRange(81, 100); err != nil {
		t.Fatal(err)
	}
	wantRange(t, l, 51, 80)
	store(t, l, 81, 90)
	wantRange(t, l, 51, 90)
	l.Close()

	l = open(t, dir, 200)
	first, _ := l.FirstIndex()
	if first > 51 || first < 1 {
		t.Fatalf("reopened after compaction to 51: first %d", first)
	}
	wantRange(t, l, first, 90)
	if err := l.DeleteRange(first, 90); err != nil {
		t.Fatal(err)
	}
	wantRange(t, l, 0, 0)
	if n := len(segFiles(t, dir)); n != 0 {
		t.Fatalf("%d segments after deleting every entry", n)
	}
	store(t, l, 500, 520)
	wantRange(t, l, 500, 520)
	l.Close()
	l = open(t, dir, 200)
	wantRange(t, l, 500, 520)
	if err := l.DeleteRange(505, 510); err == nil {
		t.Fatal("a range inside the log was deleted")
	}
}

// TestTornLastRecordCut: a crash can leave the last record of the last
// segment cut short, or followed by zeros or by the start of a record
// never completed; reopening drops what is torn (and only it) and the log
// takes appends after the last good entry. A last record garbled in place
// (no zero-filled sector: a bit flip, not a torn write) is refused, as it
// may have been acknowledged; so is a bad record in an earlier segment.
func TestTornLastRecordCut(t *testing.T) {
	// end is where the last record ends; a preallocated file is longer.
	for name, damage := range map[string]func(b []byte, end int) []byte{
		"cut short":  func(b []byte, end int) []byte { return b[:end-3] },
		"garbled":    func(b []byte, end int) []byte { b[end-2] ^= 0xff; return b },
		"zero tail":  func(b []byte, end int) []byte { return append(b[:end], make([]byte, 64)...) },
		"junk after": func(b []byte, end int) []byte { return append(b[:end], 9, 0, 0, 0, 1, 2) },
		// A short write that stopped one byte into a record's length: 26
		// is no record's length, and zeros follow.
		"length cut": func(b []byte, end int) []byte { return append(append(b[:end], 26), make([]byte, 64)...) },
		// The same byte with a non-zero byte past where the shortest
		// record would end: not the start of one append, refused.
		"length garbled": func(b []byte, end int) []byte {
			return append(append(append(b[:end], 26), make([]byte, 40)...), append([]byte{1}, make([]byte, 64)...)...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, 1<<20)
			store(t, l, 1, 20)
			end := int(l.segs[len(l.segs)-1].size)
			l.Close()
			segs := segFiles(t, dir)
			path := segs[len(segs)-1]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(b, end), 0o600); err != nil {
				t.Fatal(err)
			}
			if name == "garbled" || name == "length garbled" {
				if l, err := Open(dir, Options{SegmentSize: 1 << 20}); err == nil {
					l.Close()
					t.Fatal("a last record garbled in place opened")
				}
				return
			}
			l = open(t, dir, 1<<20)
			last, _ := l.LastIndex()
			want := uint64(19)
			if name == "zero tail" || name == "junk after" || name == "length cut" {
				want = 20
			}
			if last != want {
				t.Fatalf("last %d after the damage, want %d", last, want)
			}
			wantRange(t, l, 1, last)
			store(t, l, last+1, 30)
			l.Close()
			wantRange(t, open(t, dir, 1<<20), 1, 30)
		})
	}

	dir := t.TempDir()
	l := open(t, dir, 100)
	store(t, l, 1, 30)
	l.Close()
	segs := segFiles(t, dir)
	b, _ := os.ReadFile(segs[0])
	b[len(b)-2] ^= 0xff
	if err := os.WriteFile(segs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, Options{SegmentSize: 100}); err == nil {
		l.Close()
		t.Fatal("a garbled record in the first of several segments opened")
	}
}

// TestStableStore: keys set are read back, after a reopen too; a key never
// set reads "not found" (the text raft checks).
func TestStableStore(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 0)
	if _, err := l.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("unset key: %v, want not found", err)
	}
	if err := l.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := l.Set([]byte("LastVoteCand"), []byte("node-7")); err != nil {
		t.Fatal(err)
	}
	if err := l.SetUint64([]byte("CurrentTerm"), 43); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir, 0)
	term, err := l.GetUint64([]byte("CurrentTerm"))
	cand, err2 := l.Get([]byte("LastVoteCand"))
	if term != 43 || err != nil || string(cand) != "node-7" || err2 != nil {
		t.Fatalf("reopened: term %d (%v), candidate %q (%v)", term, err, cand, err2)
	}
	if _, err := l.GetUint64([]byte("LastVoteCand")); err == nil {
		t.Fatal("a 6-byte value read as a number")
	}
}

// TestReadsDuringWrites: replication goroutines read while raft appends and
// compacts; every read of an entry in the log returns it (run with -race).
func TestReadsDuringWrites(t *testing.T) {
	l := open(t, t.TempDir(), 512)
	store(t, l, 1, 10)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				first, _ := l.FirstIndex()
				last, _ := l.LastIndex()
				for i := last; i >= first && i > 0 && i+20 > last; i-- {
					var got raft.Log
					err := l.GetLog(i, &got)
					if errors.Is(err, raft.ErrLogNotFound) {
						break // compacted meanwhile
					}
					if err != nil || got.Index != i {
						errs <- fmt.Errorf("entry %d: %v, got index %d", i, err, got.Index)
						return
					}
				}
			}
		}()
	}
	for i := uint64(11); i <= 600; i += 10 {
		store(t, l, i, i+9)
		if i%100 == 1 {
			if err := l.DeleteRange(1, i-50); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestStaleRecordsAfterALostWriteNeverReturn: a crash can persist the later
// pages of a batch and lose the earlier ones. The log then ends before the
// lost records, and the intact records after them must never come back:
// not after new appends (shorter ones, of another term) and a reopen.
func TestStaleRecordsAfterALostWriteNeverReturn(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, 1<<20)
	store(t, l, 1, 10)
	if err := l.StoreLogs(entries(11, 20)); err != nil {
		t.Fatal(err)
	}
	s := l.segs[len(l.segs)-1]
	lost0, lost1 := s.offs[10], s.offs[12] // records 11 and 12
	l.Close()
	path := segFiles(t, dir)[0]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[lost0:lost1])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	l = open(t, dir, 1<<20)
	wantRange(t, l, 1, 10)
	// New entries 11 and 12 of another term, their records exactly as long
	// as the lost ones: the stale record 13 would follow them seamlessly.
	var newer []*raft.Log
	for i := uint64(11); i <= 12; i++ {
		e := entry(i, 1)
		e.Term = 99
		newer = append(newer, e)
	}
	if err := l.StoreLogs(newer); err != nil {
		t.Fatal(err)
	}
	if end := l.segs[len(l.segs)-1].size; end != lost1 {
		t.Fatalf("the new records end at %d, the stale record 13 starts at %d", end, lost1)
	}
	l.Close()
	l = open(t, dir, 1<<20)
	if last, _ := l.LastIndex(); last != 12 {
		t.Fatalf("log ends at %d after a lost write and two new entries, want 12", last)
	}
	var got raft.Log
	if err := l.GetLog(12, &got); err != nil || got.Term != 99 {
		t.Fatalf("entry 12: %+v, %v; want the new one of term 99", got, err)
	}
}
