package walog

import (
	"errors"
	"os"
	"syscall"
)

// syncData flushes f's data and the metadata needed to read it back (its
// size), not its times.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// allocate reserves [off, off+n) of f (fallocate, mode 0: the size grows to
// cover it). A file system without fallocate gives ErrUnsupported.
func allocate(f *os.File, off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			return ErrUnsupported
		}
		return err
	}
}
