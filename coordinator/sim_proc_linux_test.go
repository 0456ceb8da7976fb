//go:build linux

package coordinator_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// simStartSeeded starts cmd with the Go runtime's own random source fixed
// by seed, and at a low scheduling priority (simLowPriority), or for a
// replay on one CPU at a real-time one (simRT, simRealTime).
//
// The runtime seeds the source behind map iteration order, select's
// choice among ready cases, math/rand/v2's global functions and the
// scheduler's random steal order from the 16 bytes the kernel hands a new
// program (the auxiliary vector's AT_RANDOM). The child is started traced,
// so it stops right after exec, before its first instruction; those 16
// bytes are overwritten with a hash of seed, and the child detached. Two
// runs of a seed then make the same choices as long as they see the same
// events in the same order. It reports whether the bytes were set: without
// ptrace (a sandbox that forbids it) the child runs unseeded.
func simStartSeeded(cmd *exec.Cmd, seed uint64) (seeded bool, err error) {
	// ptrace requests must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		cmd.SysProcAttr.Ptrace = false
		if err := cmd.Start(); err != nil {
			return false, err
		}
		simLowPriority(cmd.Process.Pid)
		return false, nil
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		_ = cmd.Process.Kill()
		return false, fmt.Errorf("child %d did not stop after exec (%v, status %v)", pid, err, ws)
	}
	seeded = simSetATRandom(pid, seed) == nil
	if !simRT() || simRealTime(pid, int(seed%uint64(runtime.NumCPU()))) != nil {
		simLowPriority(pid)
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		_ = cmd.Process.Kill()
		return false, fmt.Errorf("detach child %d: %w", pid, err)
	}
	return seeded, nil
}

// simChildNice is the niceness a seed's child runs at, unless its parent
// runs at a higher one (CI starts its long range run under nice 19, and its
// children keep that). The seeds then take the CPU the package's other
// scenarios, which mostly wait on timers, leave; yet a child still gets
// about a tenth of a core that a process at the default priority keeps
// busy. At nice 19 (a seventieth) two such processes (a build, another
// test run) made the default seeds take 20 to 60 times as long, past go
// test's 10-minute limit for the package.
const simChildNice = 10

// simLowPriority sets process pid's niceness to simChildNice or to this
// process's own, whichever is higher (the lower priority).
func simLowPriority(pid int) {
	nice := simChildNice
	// The raw system call answers 20 - niceness.
	if raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0); err == nil {
		nice = max(nice, 20-raw)
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, nice)
}

// simSetATRandom overwrites the stopped child's AT_RANDOM bytes with the
// first 16 bytes of SHA-256(seed).
func simSetATRandom(pid int, seed uint64) error {
	const atRandom = 25 // AT_RANDOM in <elf.h>
	aux, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	sum := sha256.Sum256(append([]byte("holdfast-sim-runtime:"), b[:]...))
	for i := 0; i+16 <= len(aux); i += 16 {
		if binary.NativeEndian.Uint64(aux[i:]) == atRandom {
			addr := uintptr(binary.NativeEndian.Uint64(aux[i+8:]))
			_, err := syscall.PtracePokeData(pid, addr, sum[:16])
			return err
		}
	}
	return fmt.Errorf("no AT_RANDOM in the auxiliary vector of %d", pid)
}

// simRealTime runs pid on one CPU only, under the real-time first-in
// first-out policy at the lowest real-time priority (root only). A
// goroutine that the Go runtime finds running for 10 ms of wall time is
// preempted, and the P of a thread in a slow system call is handed to
// another thread; both depend on the wall clock and reorder goroutines, and
// they are what still parts two runs of a seed. On one CPU, with no time
// slice, the runtime's monitor thread runs only when the thread holding
// the P blocks, and no ordinary process takes the core: measured on
// replays of failing seeds (docs/TESTING.md), this parts far fewer runs
// than the round-robin policy on any CPU, or the lowest priority. The
// kernel still keeps 5 % of each second for other processes.
func simRealTime(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return err
	}
	return unix.SchedSetAttr(pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0)
}
