//go:build unix

package raftnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the file under raft/ a running node holds an exclusive
// flock on.
const lockFile = "LOCK"

// lockDir takes an exclusive lock on dir's lock file without waiting, so
// that a second node (in this process or another) on the same data dir
// fails at once instead of sharing or waiting on its raft log. Closing the
// file releases the lock; so does the process ending.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked: %w: %w", f.Name(), ErrDataDirLocked, err)
		}
		return nil, fmt.Errorf("%s is locked: %w", f.Name(), err)
	}
	return f, nil
}
