//go:build !linux

package disktest

import "testing"

// Tmpfs skips t: tmpfs mounts are Linux only.
func Tmpfs(t testing.TB, size int) string {
	unavailable(t, "a tmpfs needs Linux")
	return ""
}

// Immutable skips t: the immutable attribute is set the Linux way only.
func Immutable(t testing.TB, path string) func() {
	unavailable(t, "the immutable attribute needs Linux")
	return func() {}
}
