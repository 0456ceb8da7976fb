package raftnode

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// StorageHealth is the state of this node's raft storage (its log and
// stable store on disk): OK, or failing since a time, with the operation
// and the error. An in-memory node's storage is always OK.
type StorageHealth struct {
	// OK is false while a write of the raft log or of the term and vote
	// is failing (from the failed call until the same kind of call next
	// succeeds), and for good once the log refuses every write (Failed).
	OK bool
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

// String is one line: "ok", or what fails and since when.
func (h StorageHealth) String() string {
	switch {
	case h.OK:
		return "ok"
	case h.Failed:
		return fmt.Sprintf("failed: the raft log refuses every write until the node restarts (%s since %s): %s",
			h.Op, h.Since.UTC().Format(time.RFC3339), h.Err)
	}
	return fmt.Sprintf("failing: raft storage %s failing since %s: %s", h.Op, h.Since.UTC().Format(time.RFC3339), h.Err)
}

// healthBook keeps the storage health: the failures of each operation
// until it next succeeds.
type healthBook struct {
	mu      sync.Mutex
	now     func() time.Time
	failing map[string]failure // by op
	errors  uint64
	failed  func() error // the log's refusal of every write, or nil
	count   func(op string)
}

type failure struct {
	err   error
	since time.Time
}

func newHealthBook(failed func() error, count func(op string)) *healthBook {
	return &healthBook{now: time.Now, failing: map[string]failure{}, failed: failed, count: count}
}

// record notes the outcome of an operation.
func (b *healthBook) record(op string, err error) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		delete(b.failing, op)
		return
	}
	b.errors++
	if b.count != nil {
		b.count(op)
	}
	if _, ok := b.failing[op]; !ok {
		b.failing[op] = failure{err: err, since: b.now()}
	}
}

// appendFailing reports whether appends fail now.
func (b *healthBook) appendFailing() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.failing["append"]; ok {
		return f.err
	}
	if b.failed != nil {
		return b.failed()
	}
	return nil
}

// health is the current StorageHealth.
func (b *healthBook) health() StorageHealth {
	if b == nil {
		return StorageHealth{OK: true}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := StorageHealth{OK: true, Errors: b.errors}
	for _, op := range []string{"append", "delete", "stable"} {
		if f, ok := b.failing[op]; ok && (h.OK || f.since.Before(h.Since)) {
			h.OK, h.Op, h.Err, h.Since = false, op, f.err.Error(), f.since
		}
	}
	if b.failed != nil {
		if err := b.failed(); err != nil {
			h.OK, h.Failed, h.Err = false, true, err.Error()
			if h.Op == "" {
				h.Op, h.Since = "append", b.now()
			}
		}
	}
	return h
}

// errNotStanding is a vote for itself refused while appends fail.
var errNotStanding = errors.New("holdfast: not standing for election: this node's raft log cannot take appends")
