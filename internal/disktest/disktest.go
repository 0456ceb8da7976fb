package disktest

import (
	"os"
	"syscall"
	"testing"
)

// RequireEnv makes the root-only helpers fail a test instead of skipping it.
const RequireEnv = "HOLDFAST_REQUIRE_ROOT_DISK"

// ENOSPC is the error a full file system returns (errors.Is matches it).
var ENOSPC error = syscall.ENOSPC

// unavailable skips t, or fails it when RequireEnv is set.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires it", why, RequireEnv)
	}
	t.Skipf("skipped: %s (run as root; %s=1 turns this skip into a failure)", why, RequireEnv)
}
