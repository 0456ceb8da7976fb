package storetest

import (
	"io"
	"os"
	"syscall"
)

// memFile is an open file of a MemFS.
type memFile struct {
	m      *MemFS
	ino    *inode
	name   string
	write  bool
	closed bool
}

func (f *memFile) check(write bool) error {
	switch {
	case f.closed:
		return os.ErrClosed
	case write && !f.write:
		return syscall.EBADF
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.ino.cur)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.cur[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	ino := f.ino
	want := off + int64(len(p))
	var err error
	if grow := want - int64(len(ino.cur)); grow > 0 && grow > f.m.room() {
		want = int64(len(ino.cur)) + f.m.room()
		err = pathErr("write", f.name, syscall.ENOSPC)
	}
	if want <= off {
		return 0, err
	}
	n := want - off
	if want > int64(len(ino.cur)) {
		f.m.used += want - int64(len(ino.cur))
		ino.cur = setLen(ino.cur, want)
	}
	copy(ino.cur[off:], p[:n])
	// One pending change per sector the write touches: a crash keeps
	// sectors, not writes.
	for at := off; at < want; {
		next := min((at/512+1)*512, want)
		ino.pending = append(ino.pending, dataOp{off: at, data: append([]byte(nil), ino.cur[at:next]...)})
		at = next
	}
	return int(n), err
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return pathErr("truncate", f.name, err)
	}
	if grow := size - int64(len(f.ino.cur)); grow > f.m.room() {
		return pathErr("truncate", f.name, syscall.ENOSPC)
	}
	f.m.resize(f.ino, size)
	return nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return pathErr("sync", f.name, err)
	}
	// The durable copy catches up by the changes since the last sync (the
	// same bytes as cur, at the cost of the writes rather than the file).
	f.ino.durable = applyOps(f.ino.durable, f.ino.pending, func(int) bool { return true })
	f.ino.pending = nil
	return nil
}

func (f *memFile) Allocate(off, n int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return pathErr("fallocate", f.name, err)
	}
	end := off + n
	if grow := end - int64(len(f.ino.cur)); grow > 0 {
		if grow > f.m.room() {
			return pathErr("fallocate", f.name, syscall.ENOSPC)
		}
		f.m.resize(f.ino, end)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, pathErr("stat", f.name, err)
	}
	return int64(len(f.ino.cur)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}
