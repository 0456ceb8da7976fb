package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// TestNodesOpenNewDatabaseTogether opens one new database file from eight
// ledgers at once, many times: as the nodes of a cluster do when they start
// together on a shared file. Every open must succeed (SQLite answers the
// contended switch to WAL mode with SQLITE_BUSY at once, without waiting).
func TestNodesOpenNewDatabaseTogether(t *testing.T) {
	const rounds, openers = 60, 8
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "ledger.db")
		var wg sync.WaitGroup
		errs := make(chan error, openers)
		for range openers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := openLedger(context.Background(), path, "n", nil)
				if err != nil {
					errs <- err
					return
				}
				if err := l.close(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d of %d: %v", round, rounds, err)
		}
	}
}
