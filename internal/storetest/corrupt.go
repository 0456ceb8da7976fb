package storetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// damage is one way to corrupt a file: its name and what it does to the
// bytes (nil: remove the file).
type damage struct {
	name string
	do   func(b []byte) []byte
	cut  bool // the file cut short
}

// Corruptions builds a store in dir on a MemFS with a workload of ops
// calls, closes it, then damages its files one way at a time: bit flips
// all over every file, every 512-byte sector zeroed, record lengths
// garbled, files cut short, segments lost, renamed or copied, a stranger's
// files added. Each damaged copy must refuse to open with a
// *walog.CorruptError naming a file, or open showing the acknowledged
// entries and keys, losing at most the last batch (what a torn write could
// have left), and keeping a copy (NAME.broken) of what it cut. (The last
// segment cut short is the exception: that is what a torn append to a
// file not preallocated leaves, so the log may end where the file does.) No open
// allocates more than a bound, whatever the bytes.
func Corruptions(t testing.TB, seed uint64, open Opener, dir string, ops int, fig *Figures) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x632be59bd9b4e019))
	mem := NewMemFS(0)
	st, err := open(mem)
	if err != nil {
		t.Fatal(err)
	}
	m, w := NewModel(), NewWorkload(rng)
	for range ops {
		op := w.Next(m)
		if err := do(&st, op, open, mem); err != nil {
			t.Fatalf("seed %d: %v: %v", seed, op, err)
		}
		m = m.Apply(op)
	}
	last := w.batch(m.Last + 1)
	if err := last.Do(st); err != nil {
		t.Fatal(err)
	}
	m = m.Apply(last)
	lastBatch := last.Logs[0].Index
	st.Close()
	names, err := mem.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	lastSeg := ""
	for _, name := range names {
		if strings.HasSuffix(name, ".seg") {
			lastSeg = name
		}
	}
	if lastSeg != "" {
		b, _ := mem.ReadFile(filepath.Join(dir, lastSeg))
		lastBatch = sharedSector(b, lastBatch)
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		orig, err := mem.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range damages(rng, name, orig) {
			floor := lastBatch
			if name == lastSeg && d.cut {
				// A last segment cut short is what a torn append to a file
				// not preallocated leaves: the log may end where the file
				// does (any prefix), never show a wrong entry.
				floor = 1
			}
			img := mem.Snapshot()
			if d.do == nil {
				img.RemoveNow(path)
			} else {
				img.WriteFile(path, d.do(append([]byte(nil), orig...)))
			}
			fig.Corruptions++
			openDamaged(t, seed, img, open, dir, path, fmt.Sprintf("%s: %s", name, d.name), m, floor, !d.cut, fig)
		}
	}
	for _, d := range strangers(names, mem, dir) {
		img := mem.Snapshot()
		d.do(img)
		fig.Corruptions++
		if s, err := open(img); err == nil {
			s.Close()
			t.Fatalf("seed %d: %s: the store opened", seed, d.name)
		} else if !isCorrupt(err) {
			t.Fatalf("seed %d: %s: refused with %v, not a CorruptError naming the file", seed, d.name, err)
		}
		fig.Refused++
	}
}

func isCorrupt(err error) bool {
	var ce *walog.CorruptError
	return errors.As(err, &ce) && ce.Path != ""
}

// openDamaged opens the damaged image (path the damaged file) and checks
// the outcome. A log that shows less than m must have kept a copy of what
// it cut (wantCopy; a file cut short at a record's end leaves nothing to
// cut), unless it cut nothing: a tail the damage left all zeros is what a
// write that never reached the disk leaves, and stays on disk as it was.
func openDamaged(t testing.TB, seed uint64, img *MemFS, open Opener, dir, path, what string, m *Model, lastBatch uint64, wantCopy bool, fig *Figures) {
	t.Helper()
	damaged, _ := img.ReadFile(path)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := open(img)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("seed %d, %s: opening allocated %d MiB", seed, what, n>>20)
	}
	if err != nil {
		if !isCorrupt(err) {
			t.Fatalf("seed %d, %s: refused with %v, not a CorruptError naming the file", seed, what, err)
		}
		fig.Refused++
		return
	}
	defer s.Close()
	obs, err := Observe(s)
	switch {
	case err != nil:
	case obs.Last == 0 && lastBatch <= m.First:
		// The last batch was the whole log: losing it leaves it empty.
	default:
		err = sameLog(obs, m, max(lastBatch, 1)-1, m.Last)
	}
	if err == nil {
		err = sameKV(obs, m, nil)
	}
	if err != nil {
		fig.count(err)
		t.Fatalf("seed %d, %s: opened, but %v", seed, what, err)
	}
	if obs.Last < m.Last && wantCopy {
		names, _ := img.ReadDir(dir)
		now, _ := img.ReadFile(path)
		if !strings.Contains(strings.Join(names, " "), ".broken") && !keptAsItWas(damaged, now) {
			t.Fatalf("seed %d, %s: the log was cut to %d of %d and no copy was kept", seed, what, obs.Last, m.Last)
		}
	}
	fig.Recovered++
}

// keptAsItWas reports whether file now still holds every byte of was (a
// longer now only by zeros: space reserved again).
func keptAsItWas(was, now []byte) bool {
	if len(now) < len(was) || !bytes.Equal(now[:len(was)], was) {
		return false
	}
	for _, c := range now[len(was):] {
		if c != 0 {
			return false
		}
	}
	return true
}

// damages lists the ways to damage one file of the store.
func damages(rng *rand.Rand, name string, b []byte) []damage {
	var out []damage
	flip := func(off int, bit byte) damage {
		return damage{name: fmt.Sprintf("bit %#x of byte %d flipped", bit, off), do: func(b []byte) []byte { b[off] ^= bit; return b }}
	}
	for off := range min(len(b), 64) {
		out = append(out, flip(off, 1<<rng.IntN(8)))
	}
	for range min(len(b), 160) {
		out = append(out, flip(rng.IntN(len(b)), 1<<rng.IntN(8)))
	}
	for sec := 0; sec < len(b); sec += 512 {
		out = append(out, damage{name: fmt.Sprintf("sector at %d zeroed", sec), do: func(b []byte) []byte {
			clear(b[sec:min(sec+512, len(b))])
			return b
		}})
	}
	for range 4 {
		cut := rng.IntN(len(b) + 1)
		out = append(out, damage{name: fmt.Sprintf("cut to %d bytes", cut), do: func(b []byte) []byte { return b[:cut] }, cut: true})
	}
	if strings.HasSuffix(name, ".seg") {
		for i, off := range recordOffsets(b) {
			if i >= 40 {
				break
			}
			for _, v := range []uint32{0xffffffff, 1 << 30, 16<<20 + 1, 1 << 20, rng.Uint32N(1 << 12)} {
				out = append(out, damage{name: fmt.Sprintf("length of the record at %d set to %d", off, v), do: func(b []byte) []byte {
					binary.LittleEndian.PutUint32(b[off:], v)
					return b
				}})
			}
		}
		out = append(out, damage{name: "segment lost"})
	}
	return out
}

// sharedSector returns the first index whose record shares a 512-byte
// sector with the record of entry first (the last batch's first) in the
// segment b: a torn write of the last batch may garble that whole sector
// (recovery does not assume a disk rewrites a partly written sector
// safely), so the records of the batch before in it may be cut too.
func sharedSector(b []byte, first uint64) uint64 {
	offs := recordOffsets(b)
	start := -1
	for _, off := range offs {
		if binary.LittleEndian.Uint64(b[off+8:]) == first {
			start = off &^ 511
		}
	}
	for _, off := range offs {
		if end := off + 8 + int(binary.LittleEndian.Uint32(b[off:])); start >= 0 && end > start {
			return min(first, binary.LittleEndian.Uint64(b[off+8:]))
		}
	}
	return first
}

// recordOffsets walks a format-2 segment's records by their lengths.
func recordOffsets(b []byte) []int {
	var out []int
	for off := 40; off+8 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+8+n > len(b) {
			break
		}
		out = append(out, off)
		off += 8 + n
	}
	return out
}

// stranger is a change to the directory rather than to one file.
type stranger struct {
	name string
	do   func(img *MemFS)
}

// strangers lists files that do not belong: a segment renamed, a copy of
// one under a new number, another store's files, an unknown file, the
// state file lost.
func strangers(names []string, mem *MemFS, dir string) []stranger {
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".seg") {
			segs = append(segs, n)
		}
	}
	out := []stranger{
		{"the state file lost", func(img *MemFS) { img.RemoveNow(filepath.Join(dir, "state")) }},
		{"an unknown file", func(img *MemFS) { img.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello")) }},
		{"a raft-wal meta file", func(img *MemFS) { img.WriteFile(filepath.Join(dir, "wal-meta.db"), []byte("bolt")) }},
		{"a raft-wal segment", func(img *MemFS) {
			img.WriteFile(filepath.Join(dir, "00000000000000000001-0000000000000001.wal"), []byte("raft-wal"))
		}},
		{"a bbolt raft.db", func(img *MemFS) { img.WriteFile(filepath.Join(dir, "raft.db"), []byte("bolt")) }},
	}
	if len(segs) == 0 {
		return out
	}
	var seq uint64
	fmt.Sscanf(segs[len(segs)-1], "%020d.seg", &seq)
	first, last := segs[0], segs[len(segs)-1]
	copyTo := func(from, to string) func(img *MemFS) {
		return func(img *MemFS) {
			b, _ := img.ReadFile(filepath.Join(dir, from))
			img.WriteFile(filepath.Join(dir, to), b)
		}
	}
	out = append(out,
		stranger{"the last segment renamed past the others", func(img *MemFS) {
			copyTo(last, fmt.Sprintf("%020d.seg", seq+3))(img)
			img.RemoveNow(filepath.Join(dir, last))
		}},
		stranger{"a copy of the first segment after the last", copyTo(first, fmt.Sprintf("%020d.seg", seq+1))},
		stranger{"a copy of the last segment after it", copyTo(last, fmt.Sprintf("%020d.seg", seq+1))},
	)
	if len(segs) > 1 {
		out = append(out, stranger{"two segments swapped", func(img *MemFS) {
			a, _ := img.ReadFile(filepath.Join(dir, first))
			b, _ := img.ReadFile(filepath.Join(dir, segs[1]))
			img.WriteFile(filepath.Join(dir, first), b)
			img.WriteFile(filepath.Join(dir, segs[1]), a)
		}})
	}
	return out
}

// GarbageOpens opens n directories of random bytes (a valid state file of
// a real store beside segments of random content, some with plausible
// headers and record lengths up to 4 GiB): no open panics or allocates
// more than a bound.
func GarbageOpens(t testing.TB, seed uint64, open Opener, dir string, n int, fig *Figures) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x1d8e4e27c47d124f))
	mem := NewMemFS(0)
	st, err := open(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.StoreLogs(NewWorkload(rng).batch(1).Logs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	seg := filepath.Join(dir, "00000000000000000001.seg")
	real, _ := mem.ReadFile(seg)
	for range n {
		img := mem.Snapshot()
		b := make([]byte, 40+rng.IntN(8000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			copy(b, real[:40]) // a valid header: the records are read
		}
		for off := 40; off+8 < len(b); off += 8 + rng.IntN(200) {
			if rng.IntN(3) == 0 {
				binary.LittleEndian.PutUint32(b[off:], rng.Uint32())
			}
		}
		img.WriteFile(seg, b)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := open(img)
		runtime.ReadMemStats(&after)
		fig.Corruptions++
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Fatalf("seed %d: opening a segment of %d random bytes allocated %d MiB", seed, len(b), n>>20)
		}
		if err == nil {
			fig.Recovered++
			s.Close()
		} else {
			fig.Refused++
		}
	}
}
