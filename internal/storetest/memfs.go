package storetest

import (
	"io/fs"
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
