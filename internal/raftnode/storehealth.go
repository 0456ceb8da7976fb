package raftnode

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/internal/storehealth"
)

// StorageHealth is the state of this node's raft storage (see
// storehealth.Health).
type StorageHealth = storehealth.Health

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

// blocking returns why the node must not take a new session: its appends
// or its term and vote writes fail (not a failed compaction, which leaves
// it following the log), or the log refuses every write; nil otherwise.
func (b *healthBook) blocking() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range []string{"append", "stable"} {
		if f, ok := b.failing[op]; ok {
			return fmt.Errorf("its raft storage is failing (%s since %s): %w", op, f.since.UTC().Format(time.RFC3339), f.err)
		}
	}
	if b.failed != nil {
		if err := b.failed(); err != nil {
			return fmt.Errorf("its raft log refuses every write until the node restarts: %w", err)
		}
	}
	return nil
}

// health is the current StorageHealth.
func (b *healthBook) health() StorageHealth {
	if b == nil {
		return StorageHealth{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := StorageHealth{Errors: b.errors}
	for _, op := range []string{"append", "delete", "stable"} {
		if f, ok := b.failing[op]; ok && (!h.Failing || f.since.Before(h.Since)) {
			h.Failing, h.Op, h.Err, h.Since = true, op, f.err.Error(), f.since
		}
	}
	if b.failed != nil {
		if err := b.failed(); err != nil {
			h.Failing, h.Failed, h.Err = true, true, err.Error()
			if h.Op == "" {
				h.Op, h.Since = "append", b.now()
			}
		}
	}
	return h
}

// errNotStanding is a vote for itself refused while appends fail.
var errNotStanding = errors.New("holdfast: not standing for election: this node's raft log cannot take appends")
