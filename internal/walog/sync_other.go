//go:build !linux

package walog

import "os"

// syncData flushes f (fsync: no fdatasync here).
func syncData(f *os.File) error { return f.Sync() }

// preallocate does nothing: appends grow the file.
func preallocate(*os.File, int64) {}
