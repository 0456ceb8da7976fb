//go:build linux

package coordinator_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// childProc is a running child process: this test binary re-executed with
// HOLDFAST_CHILD set (see TestMain), its output collected by lines.
type childProc struct {
	name   string
	pid    int
	out    *testkit.Lines
	stderr *lockedBuffer

	exited  chan struct{}
	waitErr error
}

// startChild starts the test binary again with env added to the
// environment. The child dies with the test process (Pdeathsig) and is
// killed and reaped at the latest when tb's cleanup runs, which also logs
// its output if the test failed.
func startChild(tb testing.TB, name string, env ...string) *childProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	ch := &childProc{name: name, out: &testkit.Lines{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = ch.out, ch.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	ch.pid = cmd.Process.Pid
	go func() {
		ch.waitErr = cmd.Wait()
		close(ch.exited)
	}()
	tb.Cleanup(func() {
		ch.stop()
		if tb.Failed() {
			tb.Logf("%s stdout:\n%s", name, strings.Join(ch.out.Lines(), "\n"))
			tb.Logf("%s stderr:\n%s", name, ch.stderr.String())
		}
	})
	return ch
}

// stop kills the child (if it still runs, stopped or not) and reaps it.
func (ch *childProc) stop() {
	select {
	case <-ch.exited:
	default:
		_ = syscall.Kill(ch.pid, syscall.SIGKILL)
		<-ch.exited
	}
}

// exitedEarly returns an error once the child has exited.
func (ch *childProc) exitedEarly() error {
	select {
	case <-ch.exited:
		return fmt.Errorf("%s exited early: %v", ch.name, ch.waitErr)
	default:
		return nil
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
