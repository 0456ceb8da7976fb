package storetest

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// MemFS is an in-memory walog.FS that knows what a power cut would keep:
// for each file the bytes last synced and the writes since (split into
// 512-byte sectors), for each directory the entries last synced and the
// changes since. Crash returns what survives a cut now. With a capacity it
// is a disk that fills: a write growing the files past it writes what fits
// and fails with ENOSPC, an Allocate past it fails; truncating and
// overwriting never need space. Safe for concurrent use.
type MemFS struct {
	mu       sync.Mutex
	root     *memDir
	capacity int64 // 0: unlimited
	used     int64
}

type memDir struct {
	cur, durable map[string]*node
	pending      []dirOp // since the last SyncDir
}

// node is a directory entry: a directory or a file.
type node struct {
	dir  *memDir
	file *inode
}

type dirOp struct {
	name string
	n    *node // nil: a removal
}

type inode struct {
	cur, durable []byte
	pending      []dataOp // since the last Sync
}

// dataOp is one change to a file's bytes: a sector's worth of a write, or
// a change of size.
type dataOp struct {
	off  int64
	data []byte // nil: the size becomes size
	size int64
}

// NewMemFS returns an empty file system; capacity 0 is unlimited.
func NewMemFS(capacity int64) *MemFS {
	return &MemFS{root: newDir(), capacity: capacity}
}

func newDir() *memDir { return &memDir{cur: map[string]*node{}, durable: map[string]*node{}} }

// SetCapacity changes the capacity (0: unlimited): lower it to fill the
// disk, raise it to free space.
func (m *MemFS) SetCapacity(c int64) {
	m.mu.Lock()
	m.capacity = c
	m.mu.Unlock()
}

// Used is the bytes the files take.
func (m *MemFS) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookup returns the directory holding name and name's last element.
func (m *MemFS) lookup(name string) (*memDir, string, error) {
	clean := filepath.Clean(name)
	if !filepath.IsAbs(clean) {
		return nil, "", syscall.EINVAL
	}
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	d := m.root
	for _, p := range parts[:len(parts)-1] {
		n, ok := d.cur[p]
		if !ok {
			return nil, "", syscall.ENOENT
		}
		if n.dir == nil {
			return nil, "", syscall.ENOTDIR
		}
		d = n.dir
	}
	return d, parts[len(parts)-1], nil
}

// change records a directory change.
func (d *memDir) change(name string, n *node) {
	if n == nil {
		delete(d.cur, name)
	} else {
		d.cur[name] = n
	}
	d.pending = append(d.pending, dirOp{name, n})
}

// OpenFile opens or creates a file (O_CREATE, O_EXCL, O_TRUNC honoured).
func (m *MemFS) OpenFile(name string, flag int, _ os.FileMode) (walog.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n, ok := d.cur[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, syscall.EEXIST)
	case ok && n.dir != nil:
		return nil, pathErr("open", name, syscall.EISDIR)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case !ok:
		n = &node{file: &inode{}}
		d.change(base, n)
	}
	f := &memFile{m: m, ino: n.file, name: name, write: flag&(os.O_RDWR|os.O_WRONLY) != 0}
	if flag&os.O_TRUNC != 0 {
		m.resize(n.file, 0)
	}
	return f, nil
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := d.cur[base]
	switch {
	case !ok:
		return pathErr("remove", name, syscall.ENOENT)
	case n.dir != nil && len(n.dir.cur) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	if n.file != nil {
		m.used -= int64(len(n.file.cur))
	}
	d.change(base, nil)
	return nil
}

// Rename moves a file, replacing newpath.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.lookup(oldpath)
	if err != nil {
		return pathErr("rename", oldpath, err)
	}
	nd, nb, err := m.lookup(newpath)
	if err != nil {
		return pathErr("rename", newpath, err)
	}
	n, ok := od.cur[ob]
	if !ok {
		return pathErr("rename", oldpath, syscall.ENOENT)
	}
	if old, ok := nd.cur[nb]; ok && old.file != nil {
		m.used -= int64(len(old.file.cur))
	}
	od.change(ob, nil)
	nd.change(nb, n)
	return nil
}

// ReadDir lists a directory's names, sorted.
func (m *MemFS) ReadDir(name string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.dirAt(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	names := make([]string, 0, len(d.cur))
	for n := range d.cur {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (m *MemFS) dirAt(name string) (*memDir, error) {
	if filepath.Clean(name) == "/" {
		return m.root, nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	n, ok := d.cur[base]
	switch {
	case !ok:
		return nil, syscall.ENOENT
	case n.dir == nil:
		return nil, syscall.ENOTDIR
	}
	return n.dir, nil
}

// Mkdir creates a directory.
func (m *MemFS) Mkdir(name string, _ os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("mkdir", name, err)
	}
	if _, ok := d.cur[base]; ok {
		return pathErr("mkdir", name, syscall.EEXIST)
	}
	d.change(base, &node{dir: newDir()})
	return nil
}

// Stat describes a file or directory.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if filepath.Clean(name) == "/" {
		return memInfo{name: "/", dir: true}, nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	n, ok := d.cur[base]
	if !ok {
		return nil, pathErr("stat", name, syscall.ENOENT)
	}
	if n.dir != nil {
		return memInfo{name: base, dir: true}, nil
	}
	return memInfo{name: base, size: int64(len(n.file.cur))}, nil
}

// SyncDir makes a directory's entries as they are now survive a crash.
func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.dirAt(name)
	if err != nil {
		return pathErr("sync", name, err)
	}
	d.durable = make(map[string]*node, len(d.cur))
	for k, v := range d.cur {
		d.durable[k] = v
	}
	d.pending = nil
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// resize changes ino's size now, recording it. Called with mu held.
func (m *MemFS) resize(ino *inode, size int64) {
	m.used += size - int64(len(ino.cur))
	ino.cur = setLen(ino.cur, size)
	ino.pending = append(ino.pending, dataOp{data: nil, size: size})
}

// setLen returns b cut or zero-extended to n bytes.
func setLen(b []byte, n int64) []byte {
	if int64(len(b)) >= n {
		return b[:n:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

// room is how many bytes past the files' sizes may still be written.
// Called with mu held.
func (m *MemFS) room() int64 {
	if m.capacity == 0 {
		return 1 << 62
	}
	return max(m.capacity-m.used, 0)
}

type memFile struct {
	m      *MemFS
	ino    *inode
	name   string
	write  bool
	closed bool
}

func (f *memFile) check(write bool) error {
	switch {
	case f.closed:
		return os.ErrClosed
	case write && !f.write:
		return syscall.EBADF
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.ino.cur)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.cur[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	ino := f.ino
	want := off + int64(len(p))
	var err error
	if grow := want - int64(len(ino.cur)); grow > 0 && grow > f.m.room() {
		want = int64(len(ino.cur)) + f.m.room()
		err = pathErr("write", f.name, syscall.ENOSPC)
	}
	if want <= off {
		return 0, err
	}
	n := want - off
	if want > int64(len(ino.cur)) {
		f.m.used += want - int64(len(ino.cur))
		ino.cur = setLen(ino.cur, want)
	}
	copy(ino.cur[off:], p[:n])
	// One pending change per sector the write touches: a crash keeps
	// sectors, not writes.
	for at := off; at < want; {
		next := min((at/512+1)*512, want)
		ino.pending = append(ino.pending, dataOp{off: at, data: append([]byte(nil), ino.cur[at:next]...)})
		at = next
	}
	return int(n), err
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return pathErr("truncate", f.name, err)
	}
	if grow := size - int64(len(f.ino.cur)); grow > f.m.room() {
		return pathErr("truncate", f.name, syscall.ENOSPC)
	}
	f.m.resize(f.ino, size)
	return nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return pathErr("sync", f.name, err)
	}
	f.ino.durable = append([]byte(nil), f.ino.cur...)
	f.ino.pending = nil
	return nil
}

func (f *memFile) Allocate(off, n int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return pathErr("fallocate", f.name, err)
	}
	end := off + n
	if grow := end - int64(len(f.ino.cur)); grow > 0 {
		if grow > f.m.room() {
			return pathErr("fallocate", f.name, syscall.ENOSPC)
		}
		f.m.resize(f.ino, end)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, pathErr("stat", f.name, err)
	}
	return int64(len(f.ino.cur)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}

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
	b := append([]byte(nil), ino.durable...)
	for i, op := range ino.pending {
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
	c := &inode{cur: b, durable: append([]byte(nil), b...)}
	done[ino] = c
	return c
}

// Snapshot returns a copy of m as it is now (every write kept, all of it
// durable in the copy).
func (m *MemFS) Snapshot() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &MemFS{capacity: m.capacity, used: m.used}
	out.root = snapDir(m.root)
	return out
}

func snapDir(d *memDir) *memDir {
	out := newDir()
	for name, n := range d.cur {
		var c *node
		if n.dir != nil {
			c = &node{dir: snapDir(n.dir)}
		} else {
			b := append([]byte(nil), n.file.cur...)
			c = &node{file: &inode{cur: b, durable: append([]byte(nil), b...)}}
		}
		out.cur[name], out.durable[name] = c, c
	}
	return out
}

// ReadFile returns a file's bytes.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	n, ok := d.cur[base]
	if !ok || n.file == nil {
		return nil, pathErr("read", name, syscall.ENOENT)
	}
	return append([]byte(nil), n.file.cur...), nil
}

// WriteFile replaces (or creates) a file with b, durable at once: for
// tests that damage a closed store's files.
func (m *MemFS) WriteFile(name string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("write", name, err)
	}
	n, ok := d.cur[base]
	if !ok {
		n = &node{file: &inode{}}
		d.cur[base], d.durable[base] = n, n
	}
	if n.file == nil {
		return pathErr("write", name, syscall.EISDIR)
	}
	m.used += int64(len(b) - len(n.file.cur))
	n.file.cur, n.file.durable, n.file.pending = append([]byte(nil), b...), append([]byte(nil), b...), nil
	return nil
}

// RemoveNow removes a file at once, durably (for tests that lose one).
func (m *MemFS) RemoveNow(name string) error {
	if err := m.Remove(name); err != nil {
		return err
	}
	return m.SyncDir(filepath.Dir(name))
}
