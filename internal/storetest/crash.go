package storetest

import (
	"math/rand/v2"
	"sort"
)

// CrashMode is which writes not yet synced a power cut keeps.
type CrashMode int

// The crash modes.
const (
	// DropUnsynced loses every write and directory change not yet synced.
	DropUnsynced CrashMode = iota
	// DropPrefix loses the earliest unsynced sectors of each file and keeps
	// the later ones (a disk that wrote back out of order).
	DropPrefix
	// KeepPrefix keeps the earliest unsynced sectors of each file and loses
	// the later ones (a write cut short).
	KeepPrefix
	// RandomSubset keeps each unsynced sector or not at random.
	RandomSubset
	crashModes
)

// String names the mode.
func (c CrashMode) String() string {
	return [...]string{"drop-unsynced", "drop-prefix", "keep-prefix", "random-subset"}[c]
}

// Crash returns a new MemFS holding what a power cut now would leave,
// under mode (rng picks the sectors and how many of each directory's
// unsynced changes are kept, in order); m is not changed.
func (m *MemFS) Crash(rng *rand.Rand, mode CrashMode) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &MemFS{capacity: m.capacity}
	done := map[*inode]*inode{}
	out.root = crashDir(m.root, rng, mode, done)
	for _, ino := range done {
		out.used += int64(len(ino.cur))
	}
	return out
}

func crashDir(d *memDir, rng *rand.Rand, mode CrashMode, done map[*inode]*inode) *memDir {
	entries := make(map[string]*node, len(d.durable))
	for k, v := range d.durable {
		entries[k] = v
	}
	keep := 0
	if mode != DropUnsynced {
		keep = rng.IntN(len(d.pending) + 1)
	}
	for _, op := range d.pending[:keep] {
		if op.n == nil {
			delete(entries, op.name)
		} else {
			entries[op.name] = op.n
		}
	}
	out := newDir()
	names := make([]string, 0, len(entries))
	for k := range entries {
		names = append(names, k)
	}
	sort.Strings(names) // the same seed picks the same sectors
	for _, name := range names {
		n := entries[name]
		var c *node
		if n.dir != nil {
			c = &node{dir: crashDir(n.dir, rng, mode, done)}
		} else {
			c = &node{file: crashFile(n.file, rng, mode, done)}
		}
		out.cur[name], out.durable[name] = c, c
	}
	return out
}

func crashFile(ino *inode, rng *rand.Rand, mode CrashMode, done map[*inode]*inode) *inode {
	if c, ok := done[ino]; ok {
		return c
	}
	kept := func(i int) bool { return false }
	k := rng.IntN(len(ino.pending) + 1)
	switch mode {
	case DropPrefix:
		kept = func(i int) bool { return i >= k }
	case KeepPrefix:
		kept = func(i int) bool { return i < k }
	case RandomSubset:
		kept = func(int) bool { return rng.IntN(2) == 0 }
	}
	b := applyOps(append([]byte(nil), ino.durable...), ino.pending, kept)
	c := &inode{cur: b, durable: append([]byte(nil), b...)}
	done[ino] = c
	return c
}

// applyOps applies to b, in order, the ops that kept selects, and returns
// the result (b's array, grown where an op needs it).
func applyOps(b []byte, ops []dataOp, kept func(int) bool) []byte {
	for i, op := range ops {
		if !kept(i) {
			continue
		}
		if op.data == nil {
			b = setLen(b, op.size)
			continue
		}
		b = setLen(b, max(int64(len(b)), op.off+int64(len(op.data))))
		copy(b[op.off:], op.data)
	}
	return b
}
