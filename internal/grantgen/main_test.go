package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }

// TestGeneratedFileIsCurrent fails when coordinator/grantmethods_gen.go is
// not what grantgen writes: run go generate ./coordinator.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "coordinator", "grantmethods_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("coordinator/grantmethods_gen.go is stale: run go generate ./coordinator")
	}
}
