package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file at path with b, mode 0600: it writes path+".tmp",
// syncs it, renames it over path and syncs the directory. On error the file
// at path is unchanged (a stale path+".tmp" may remain; the next Write
// truncates it).
func Write(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
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
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs the directory dir, so that files created, renamed or
// deleted in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
