package lincheck

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestRecheckSaved checks again a history that Verify saved (its failure
// names the file), for as long as it takes: it runs only when
// HOLDFAST_LIN_RECHECK names the file. The model is the lease model, or
// the semaphore model of N permits when HOLDFAST_LIN_RECHECK_LIMIT=N; the
// time limit is HOLDFAST_LIN_RECHECK_TIMEOUT (a Go duration, default 1h).
//
//	HOLDFAST_LIN_RECHECK=/tmp/x/lease-seed7.json go test ./internal/lincheck -run TestRecheckSaved -v -timeout 0
func TestRecheckSaved(t *testing.T) {
	path := os.Getenv("HOLDFAST_LIN_RECHECK")
	if path == "" {
		t.Skip("HOLDFAST_LIN_RECHECK names no saved history")
	}
	ops, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	model, timeout := LeaseModel(), time.Hour
	if v := os.Getenv("HOLDFAST_LIN_RECHECK_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOLDFAST_LIN_RECHECK_LIMIT=%q: want a number of permits", v)
		}
		model = SemaphoreModel(n)
	}
	if v := os.Getenv("HOLDFAST_LIN_RECHECK_TIMEOUT"); v != "" {
		if timeout, err = time.ParseDuration(v); err != nil {
			t.Fatalf("HOLDFAST_LIN_RECHECK_TIMEOUT: %v", err)
		}
	}
	start := time.Now()
	res, _ := Check(model, ops, timeout)
	t.Logf("%s: %v: %s after %v", path, Count(ops), res, time.Since(start))
	if res != porcupine.Ok {
		t.Errorf("%s: %s", strings.TrimSuffix(path, ".json"), res)
	}
}
