package storehealth

import (
	"fmt"
	"time"
)

// Health is the state of a node's raft storage: fine (the zero Health),
// or failing since a time, with the operation and the error. An in-memory
// node's storage is always fine.
type Health struct {
	// Failing is true while a write of the raft log or of the term and vote
	// is failing (from the failed call until the same kind of call next
	// succeeds), and for good once the log refuses every write (Failed).
	Failing bool
	// Op is the failing operation: "append", "delete", "stable" (term and
	// vote); Err its error; Since when it first failed.
	Op    string
	Err   string
	Since time.Time
	// Failed is set once the log refuses every write (a failure it could
	// not undo): only a restart of the node helps then.
	Failed bool
	// Errors counts every storage error since the node started.
	Errors uint64
}

// String is one line: "ok", or what fails since when, and why.
func (h Health) String() string {
	switch {
	case !h.Failing:
		return "ok"
	case h.Failed:
		return fmt.Sprintf("failed since %s (%s): %s; the raft log refuses every write until the node restarts",
			h.Since.UTC().Format(time.RFC3339), h.Op, h.Err)
	}
	return fmt.Sprintf("failing since %s (%s): %s", h.Since.UTC().Format(time.RFC3339), h.Op, h.Err)
}
