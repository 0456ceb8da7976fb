package disktest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs of size bytes on a new directory under t.TempDir()
// and returns the directory; it is unmounted when t ends. It needs root.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		unavailable(t, fmt.Sprintf("mounting a tmpfs: %v", err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// Immutable sets the immutable attribute (chattr +i) on path: writes,
// truncations and renames of a file, or creations and removals in a
// directory, then fail with EPERM, even for root. The returned function
// clears it (and so does the end of t). It needs root and a file system
// with the attribute (ext4, xfs, btrfs; not tmpfs).
func Immutable(t testing.TB, path string) (undo func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "setting the immutable attribute needs root")
	}
	if err := setFlag(path, true); err != nil {
		unavailable(t, fmt.Sprintf("setting the immutable attribute on %s: %v", path, err))
	}
	done := false
	undo = func() {
		if done {
			return
		}
		done = true
		if err := setFlag(path, false); err != nil {
			t.Errorf("clearing the immutable attribute on %s: %v", path, err)
		}
	}
	t.Cleanup(undo)
	return undo
}

func setFlag(path string, on bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= immutableFlag
	} else {
		flags &^= immutableFlag
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
}

// immutableFlag is FS_IMMUTABLE_FL of linux/fs.h.
const immutableFlag = 0x00000010
