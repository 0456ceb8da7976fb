// Package disktest gives tests the real disk faults a store must survive:
// a small tmpfs that fills up (ENOSPC), and files or directories made
// immutable so that writes, truncations and removals fail (EPERM). Both
// need root; off root a test using them is skipped with a message saying
// so, or fails when HOLDFAST_REQUIRE_ROOT_DISK=1 is set (CI sets it: it runs
// as root, where a skip would hide a broken runner).
package disktest
