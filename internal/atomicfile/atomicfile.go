package atomicfile

import (
	"io"
	"os"
	"path/filepath"

	"github.com/holdfast-go/holdfast/internal/walog"
)

// Write replaces the file at path with b, mode 0600: it writes path+".tmp",
// syncs it, renames it over path and syncs the directory. On error the file
// at path is unchanged (a stale path+".tmp" may remain; the next Write
// truncates it).
func Write(path string, b []byte) error { return WriteFS(walog.OSFS(), path, b) }

// WriteFS is Write on the file system fsys.
func WriteFS(fsys walog.FS, path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// ReadFS returns the content of the file at path on fsys; its error wraps
// fs.ErrNotExist when there is none.
func ReadFS(fsys walog.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// SyncDir syncs the directory dir, so that the files created, renamed or
// removed in it survive a crash.
func SyncDir(dir string) error { return walog.OSFS().SyncDir(dir) }
