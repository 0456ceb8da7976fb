package holdfasttest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/holdfast-go/holdfast/internal/disktest"
)

// portsChildEnv tells a child of this test binary to reserve one port:
// "base,lo,hi". It prints "port=P dir=D" and exits, which drops its lock.
const portsChildEnv = "HOLDFASTTEST_PORTS_CHILD"

// nobody is the user the children run as.
const nobody = 65534

// TestPortLocksAcrossUsers: a second user of the machine reserves ports
// beside the first, and never one the first holds. A shared directory
// that an older holdfasttest left writable by its owner alone sends the
// second user to a directory of its own instead of failing every test.
func TestPortLocksAcrossUsers(t *testing.T) {
	if spec := os.Getenv(portsChildEnv); spec != "" {
		portsChild(t, spec)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv(disktest.RequireEnv) == "1" {
			t.Fatalf("running a child as another user needs root, and %s=1 requires it", disktest.RequireEnv)
		}
		t.Skip("running a child as another user needs root")
	}
	lo, hi, ok := belowEphemeral()
	if !ok {
		t.Skip("no port range below the ephemeral one")
	}
	hi = lo + 64
	exe := worldExecutable(t)

	t.Run("shared", func(t *testing.T) {
		base := worldDir(t)
		dir, err := portDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for p := lo; p < hi; p++ { // every lock file there already, as the first user's earlier runs leave them
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(p)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var pl portLocks
		defer pl.release()
		held := map[int]bool{}
		for len(held) < 32 {
			p, _, err := pl.reserveIn(dir, lo, hi)
			if err != nil {
				t.Fatal(err)
			}
			held[p] = true
		}
		p, childDir := runPortsChild(t, exe, base, lo, hi)
		if childDir != dir {
			t.Errorf("the second user's lock file is in %s, want the shared %s", childDir, dir)
		}
		if held[p] {
			t.Errorf("the second user was given port %d, which the first holds (it holds %d of [%d, %d))", p, len(held), lo, hi)
		}
	})

	t.Run("left private by another user", func(t *testing.T) {
		base := worldDir(t)
		shared := filepath.Join(base, portDirName)
		if err := os.Mkdir(shared, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shared, 0o755); err != nil { // whatever the umask
			t.Fatal(err)
		}
		p, childDir := runPortsChild(t, exe, base, lo, hi)
		if want := fmt.Sprintf("%s-%d", shared, nobody); childDir != want { // testkit.OwnDir as user nobody
			t.Errorf("the second user's lock file is in %s, want its own %s", childDir, want)
		}
		if p < lo || p >= hi {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
	})
}

// portsChild reserves one port as spec says and prints it.
func portsChild(t *testing.T, spec string) {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		t.Fatalf("%s=%q: want base,lo,hi", portsChildEnv, spec)
	}
	lo, err1 := strconv.Atoi(parts[1])
	hi, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("%s=%q: lo and hi must be numbers", portsChildEnv, spec)
	}
	dir, err := portDir(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var pl portLocks
	defer pl.release()
	p, _, err := pl.reserveIn(dir, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("port=%d dir=%s\n", p, dir)
}

// runPortsChild runs the test binary exe as nobody to reserve a port of
// [lo, hi) under base, and returns the port and its lock file's directory.
func runPortsChild(t *testing.T, exe, base string, lo, hi int) (int, string) {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^TestPortLocksAcrossUsers$", "-test.count=1")
	cmd.Dir = filepath.Dir(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", portsChildEnv, base, lo, hi))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child as user %d: %v; its output:\n%s", nobody, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var p int
		var dir string
		if n, _ := fmt.Sscanf(sc.Text(), "port=%d dir=%s", &p, &dir); n == 2 {
			return p, dir
		}
	}
	t.Fatalf("the child printed no port; its output:\n%s", out)
	return 0, ""
}

// worldDir returns a new directory under t.TempDir() that every user may
// write (mode 1777, as /tmp), on a path every user may reach.
func worldDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(reachableTempDir(t), "base")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reachableTempDir returns t.TempDir() with it and its parent made
// searchable by every user (they are 0700).
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// worldExecutable copies this test binary where every user may run it.
func worldExecutable(t *testing.T) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	exe := filepath.Join(reachableTempDir(t), "holdfasttest.test")
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}
