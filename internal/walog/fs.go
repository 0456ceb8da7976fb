package walog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// FS is the file system a Log works through: the operating system's
// (OSFS), or in tests one that injects failures, fills up or loses what
// was not synced at a simulated power cut. Names are full paths.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames a file, replacing newpath.
	Rename(oldpath, newpath string) error
	// ReadDir returns the names in a directory, sorted.
	ReadDir(name string) ([]string, error)
	// Mkdir creates a directory.
	Mkdir(name string, perm os.FileMode) error
	// Stat describes a file; its error wraps fs.ErrNotExist when there is
	// none.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir syncs a directory, so that the files created, renamed or
	// removed in it survive a crash.
	SyncDir(name string) error
}

// File is an open file of an FS. Its methods may be called from several
// goroutines at once (reads beside a write).
type File interface {
	// ReadAt and WriteAt are io.ReaderAt's and io.WriterAt's.
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Truncate sets the file's size.
	Truncate(size int64) error
	// Sync makes the file's data and size durable (fdatasync where there is
	// one).
	Sync() error
	// Allocate reserves the bytes [off, off+n) (reading as zeros where
	// unwritten, the size growing to cover them), so that writing there
	// later needs no space; ErrUnsupported when the file system cannot.
	Allocate(off, n int64) error
	// Size is the file's size.
	Size() (int64, error)
	// Close closes the file.
	Close() error
}

// ErrUnsupported is returned by File.Allocate on a file system that cannot
// reserve space (the Log then grows its files by writing).
var ErrUnsupported = errors.ErrUnsupported

// OSFS returns the operating system's file system.
func OSFS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                  { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (osFS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)     { return os.Stat(name) }

func (osFS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type osFile struct{ f *os.File }

func (o osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osFile) Truncate(size int64) error                { return o.f.Truncate(size) }
func (o osFile) Sync() error                              { return syncData(o.f) }
func (o osFile) Allocate(off, n int64) error              { return allocate(o.f, off, n) }
func (o osFile) Close() error                             { return o.f.Close() }

func (o osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// MkdirAll creates dir and any missing parents, syncing the directory that
// holds each one it creates, so that a directory made on a node's first
// boot survives a power cut with what is then written in it.
func MkdirAll(fsys FS, dir string) error {
	dir = filepath.Clean(dir)
	fi, err := fsys.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("walog: %s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("walog: %w", err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(fsys, parent); err != nil {
			return err
		}
	}
	if err := fsys.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("walog: %w", err)
	}
	if err := fsys.SyncDir(parent); err != nil {
		return fmt.Errorf("walog: syncing %s: %w", parent, err)
	}
	return nil
}
