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

// dirLock is a data dir's lock: the lock file, held under an exclusive
// flock while open.
type dirLock struct{ f *os.File }

// Close releases the lock, then closes the file. A flock belongs to the
// open file, which a child started by any goroutine of this process shares
// from its fork until its exec has closed it (the file is close-on-exec,
// but the kernel may finish that close after the parent has gone on):
// closing the file alone would leave the lock held a moment longer by such
// a child, and a node opened on the same data dir right after Close (a
// restart in the same process) would find it "in use by a running node".
// Unlocking first releases it for every holder of the open file at once.
func (l *dirLock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockDir takes an exclusive lock on dir's lock file without waiting, so
// that a second node (in this process or another) on the same data dir
// fails at once instead of sharing or waiting on its raft log. Closing it
// releases the lock; so does the process ending.
func lockDir(dir string) (*dirLock, error) {
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
	return &dirLock{f}, nil
}
