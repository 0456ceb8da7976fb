package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// built holds the binaries the tests run, each built once per test binary
// (a build with a warm cache is still a link of a few seconds, which every
// process test used to pay) into a directory TestMain removes.
var built struct {
	mu   sync.Mutex
	dir  string
	bins map[string]builtBinary // by package path
}

type builtBinary struct {
	path string
	err  error
	out  []byte
}

// buildOnce returns the binary of pkg (a path relative to this package),
// building it the first time a test asks. A failed build fails every test
// that asks for it, each with the build's output.
func buildOnce(t *testing.T, name, pkg string) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is not on PATH: %v", err)
	}
	built.mu.Lock()
	defer built.mu.Unlock()
	b, ok := built.bins[pkg]
	if !ok {
		if built.dir == "" {
			if built.dir, err = os.MkdirTemp("", "ledger-test-bin-"); err != nil {
				t.Fatal(err)
			}
			built.bins = map[string]builtBinary{}
		}
		start := time.Now()
		b.path = filepath.Join(built.dir, name)
		b.out, b.err = exec.Command(gotool, "build", "-o", b.path, pkg).CombinedOutput()
		built.bins[pkg] = b
		if b.err == nil {
			t.Logf("built the %s binary in %v", name, time.Since(start).Round(time.Millisecond))
		}
	}
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", name, b.err, b.out)
	}
	return b.path
}

// buildLedger returns this package's binary.
func buildLedger(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "ledger", ".")
}

// buildHoldfastctl returns cmd/holdfastctl's binary.
func buildHoldfastctl(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "holdfastctl", "../../cmd/holdfastctl")
}

// removeBuilt removes the binaries the tests built.
func removeBuilt() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
