//go:build !linux

package coordinator_test

import "os/exec"

// simStartSeeded starts cmd; only on Linux does it fix the child's
// runtime random source (see sim_proc_linux_test.go).
func simStartSeeded(cmd *exec.Cmd, _ uint64) (seeded bool, err error) { return false, cmd.Start() }
