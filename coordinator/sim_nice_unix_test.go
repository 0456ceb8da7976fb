//go:build unix

package coordinator_test

import "syscall"

// simNice gives process pid the lowest scheduling priority.
func simNice(pid int) error { return syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19) }
