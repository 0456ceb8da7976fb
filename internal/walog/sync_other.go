//go:build !linux

package walog

import "os"

// syncData flushes f (fsync: no fdatasync here).
func syncData(f *os.File) error { return f.Sync() }

// allocate is unsupported here: appends grow the file.
func allocate(*os.File, int64, int64) error { return ErrUnsupported }
