package storetest

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// Op is a kind of file system call a FaultFS can fail.
type Op string

// The calls a FaultFS counts and can fail: every one that changes a file
// or a directory or makes it durable.
const (
	OpCreate   Op = "create" // OpenFile with O_CREATE
	OpWrite    Op = "write"
	OpSync     Op = "sync"
	OpAllocate Op = "fallocate"
	OpTruncate Op = "truncate"
	OpRemove   Op = "remove"
	OpRename   Op = "rename"
	OpMkdir    Op = "mkdir"
	OpSyncDir  Op = "syncdir"
)

// Call is one counted call: its number (from 1), kind and path.
type Call struct {
	N    int
	Op   Op
	Path string
}

// Rule decides a call's fate: nil lets it through, an error fails it. A
// write that fails writes the first half of its bytes first, as a write
// that meets a full disk or a failing device can.
type Rule func(Call) error

// ErrPowerCut is the error of every call after a simulated power cut.
var ErrPowerCut = errors.New("storetest: the power is off")

// EIO and ENOSPC are the errors injected for a failing device and a full
// disk.
var (
	EIO    error = syscall.EIO
	ENOSPC error = syscall.ENOSPC
)

// FaultFS wraps a walog.FS, counts the calls that change it and fails the
// ones its Rule says. Safe for concurrent use.
type FaultFS struct {
	base walog.FS
	mu   sync.Mutex
	n    int
	rule Rule
	hits map[Op]int
}

// NewFaultFS wraps base; nothing fails until SetRule.
func NewFaultFS(base walog.FS) *FaultFS { return &FaultFS{base: base, hits: map[Op]int{}} }

// SetRule sets the rule (nil: every call goes through).
func (f *FaultFS) SetRule(r Rule) {
	f.mu.Lock()
	f.rule = r
	f.mu.Unlock()
}

// Calls is how many calls were counted so far.
func (f *FaultFS) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Injected returns how many calls of each kind the rule failed.
func (f *FaultFS) Injected() map[Op]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Op]int, len(f.hits))
	for k, v := range f.hits {
		out[k] = v
	}
	return out
}

// call counts a call and returns the rule's verdict.
func (f *FaultFS) call(op Op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.rule == nil {
		return nil
	}
	err := f.rule(Call{N: f.n, Op: op, Path: path})
	if err != nil {
		f.hits[op]++
		return &fs.PathError{Op: string(op), Path: path, Err: err}
	}
	return nil
}

// OpenFile opens a file of the wrapped FS; with O_CREATE it is a counted call.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (walog.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.call(OpCreate, name); err != nil {
			return nil, err
		}
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

// Remove is a counted call to the wrapped FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.call(OpRemove, name); err != nil {
		return err
	}
	return f.base.Remove(name)
}

// Rename is a counted call to the wrapped FS.
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if err := f.call(OpRename, oldpath); err != nil {
		return err
	}
	return f.base.Rename(oldpath, newpath)
}

// ReadDir reads the wrapped FS (not counted).
func (f *FaultFS) ReadDir(name string) ([]string, error) { return f.base.ReadDir(name) }

// Mkdir is a counted call to the wrapped FS.
func (f *FaultFS) Mkdir(name string, perm os.FileMode) error {
	if err := f.call(OpMkdir, name); err != nil {
		return err
	}
	return f.base.Mkdir(name, perm)
}

// Stat reads the wrapped FS (not counted).
func (f *FaultFS) Stat(name string) (fs.FileInfo, error) { return f.base.Stat(name) }

// SyncDir is a counted call to the wrapped FS.
func (f *FaultFS) SyncDir(name string) error {
	if err := f.call(OpSyncDir, name); err != nil {
		return err
	}
	return f.base.SyncDir(name)
}

type faultFile struct {
	walog.File
	fs   *FaultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.call(OpWrite, f.name); err != nil {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.call(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Allocate(off, n int64) error {
	if err := f.fs.call(OpAllocate, f.name); err != nil {
		return err
	}
	return f.File.Allocate(off, n)
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.call(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
