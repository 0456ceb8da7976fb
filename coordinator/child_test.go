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
)

// childProc is a running child process: this test binary re-executed with
// HOLDFAST_CHILD set (see TestMain), its output collected by lines.
type childProc struct {
	name   string
	pid    int
	out    *childOutput
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
	ch := &childProc{name: name, out: &childOutput{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
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

// childOutput collects the child's stdout by lines.
type childOutput struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

func (o *childOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.part = append(o.part, p...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			break
		}
		o.lines = append(o.lines, string(o.part[:i]))
		o.part = o.part[i+1:]
	}
	return len(p), nil
}

// Lines returns a copy of the complete lines written so far.
func (o *childOutput) Lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
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
