package walog

import (
	"os"
	"syscall"
)

// syncData flushes f's data and the metadata needed to read it back (its
// size), not its times.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate reserves size bytes for f (reading as zeros), so that an
// append writes into allocated blocks instead of growing the file, which
// makes each sync cheaper. A file system without fallocate is left as is.
func preallocate(f *os.File, size int64) {
	_ = syscall.Fallocate(int(f.Fd()), 0, 0, size)
}
