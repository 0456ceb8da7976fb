package walog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// ErrNotDurable is WaitDurable's answer when the entry will not become
// durable through this Log: the log failed (a deferred sync failed) or was
// closed first.
var ErrNotDurable = errors.New("walog: the entry is not on disk and will not be through this log")

// durability is the deferred-sync state of a Log (see Options.DeferSync).
// pending and pendingLast are under wmu; durable is read without locks;
// wait is closed and replaced, under dmu, whenever durable moves or the
// log fails or closes.
type durability struct {
	decide      func([]*raft.Log) bool
	deferred    func()
	pending     *segment // the segment holding the last batch, written but not yet synced (nil: none)
	pendingLast uint64
	durable     atomic.Uint64
	dmu         sync.Mutex
	wait        chan struct{}
	over        error // under dmu: set once the log failed or closed
}

// Durable returns the last index known to be on disk: every entry up to it
// was synced. It is behind LastIndex only while a batch StoreLogs wrote
// with a deferred sync (Options.DeferSync) waits for its sync.
func (l *Log) Durable() uint64 { return l.dur.durable.Load() }

// WaitDurable waits until the entry at index is on disk (Durable() >=
// index), and returns nil then; ErrNotDurable if the log fails or closes
// first; or ErrClosed if stop is closed first.
func (l *Log) WaitDurable(index uint64, stop <-chan struct{}) error {
	for {
		if l.dur.durable.Load() >= index {
			return nil
		}
		l.dur.dmu.Lock()
		over, wait := l.dur.over, l.dur.wait
		l.dur.dmu.Unlock()
		if l.dur.durable.Load() >= index {
			return nil
		}
		if over != nil {
			return fmt.Errorf("%w: %w", ErrNotDurable, over)
		}
		select {
		case <-wait:
		case <-stop:
			return ErrClosed
		}
	}
}

// SyncDeferred syncs the batch the last StoreLogs wrote with a deferred
// sync, if it is not synced yet, and returns once it is on disk (Durable
// then covers it). A failed sync cannot be undone (raft took the entries
// as stored): the log then refuses every write until it is reopened, and
// the entries never become durable through it.
func (l *Log) SyncDeferred() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.dur.pending == nil {
		return nil
	}
	return l.flushLocked()
}

// flushLocked syncs the pending deferred batch, if any. Every write calls
// it first, so that at most the last batch is ever unsynced (what a crash
// may tear, as in a sync-per-call log). Called with wmu held.
func (l *Log) flushLocked() error {
	s := l.dur.pending
	if s == nil {
		return nil
	}
	l.dur.pending = nil
	if err := s.f.Sync(); err != nil {
		err = l.poison(fmt.Errorf("walog: syncing entries up to %d in %s (written, and taken as stored by their caller, so the failure cannot be undone): %w: the log refuses every write until it is reopened", l.dur.pendingLast, s.path, err))
		l.endDurability(err)
		return err
	}
	l.setDurable(l.dur.pendingLast)
	return nil
}

// setDurable records that every entry up to last is on disk.
func (l *Log) setDurable(last uint64) {
	l.dur.dmu.Lock()
	defer l.dur.dmu.Unlock()
	l.dur.durable.Store(last)
	if l.dur.wait != nil {
		close(l.dur.wait)
	}
	l.dur.wait = make(chan struct{})
}

// lowerDurable moves Durable back to last after a suffix deletion.
func (l *Log) lowerDurable(last uint64) {
	if l.dur.durable.Load() > last {
		l.setDurable(last)
	}
}

// endDurability wakes every WaitDurable for good: the log failed or closed.
func (l *Log) endDurability(why error) {
	l.dur.dmu.Lock()
	defer l.dur.dmu.Unlock()
	if l.dur.over == nil {
		l.dur.over = why
		if l.dur.wait != nil {
			close(l.dur.wait)
		}
		l.dur.wait = make(chan struct{})
	}
}

// deferring reports whether a StoreLogs of logs may return before its sync.
func (l *Log) deferring(logs []*raft.Log) bool {
	return l.dur.decide != nil && l.dur.decide(logs)
}

// stored records a StoreLogs that wrote entries up to last in s: durable at
// once, or pending until SyncDeferred or the next write when deferred.
// Called with wmu held.
func (l *Log) stored(s *segment, last uint64, deferred bool) {
	if !deferred {
		l.setDurable(last)
		return
	}
	l.dur.pending, l.dur.pendingLast = s, last
	if l.dur.deferred != nil {
		l.dur.deferred()
	}
}
