package raftnode

import (
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// leaderWrites lets the raft leader's log appends return before their
// sync, so that raft sends the entries to the followers while the leader's
// own disk writes them (the followers' appends still return only once
// synced). hashicorp/raft syncs the leader's append before it replicates
// it, which puts one sync of the leader's disk in series with the
// followers' on every commit.
//
// raft then counts the leader's copy toward a commit before it is on disk;
// nothing may act on such a commit until it is. Three places see a
// commit, and each waits for the leader's sync:
//
//   - the state machine: gate holds each entry until the log has it on
//     disk (Durable), so no Apply answers, no read sees it, and no lease or
//     shard changes before it is on the leader's disk, as before;
//   - the followers: clamp lowers the commit index an AppendEntries
//     carries to what the leader has on disk, so no follower applies an
//     entry the leader could still lose;
//   - raft itself, for configuration changes and barriers: those batches
//     are synced before StoreLogs returns (decide defers only batches of
//     commands).
//
// So an entry anyone sees committed is on the disks of a majority that
// includes the leader, as when the leader synced first. If the leader
// crashes before its sync, what it loses nobody saw; a follower that
// stored it keeps it or has it replaced, as any uncommitted entry.
//
// The write-ahead log keeps at most the last batch unsynced (the next
// write syncs it first), so a crash tears at most the last batch, as
// before. A failed deferred sync cannot be undone (raft took the entries
// as stored): the log refuses every write after it, the entries never
// pass gate, and the node stops applying until it is stopped.
type leaderWrites struct {
	raft   atomic.Pointer[raft.Raft]
	log    deferredLog // nil: the log syncs every append (bbolt, memory)
	voters voterCache  // counts the voters (a leader alone syncs first)
	kick   chan struct{}
	// skipped is set once gate let an entry through unapplied (the node
	// stopped first): the state machine then lacks an entry raft counts as
	// applied, and must not be snapshotted.
	skipped atomic.Bool
}

// deferredLog is the part of the write-ahead log leaderWrites uses
// (internal/walog).
type deferredLog interface {
	Durable() uint64
	WaitDurable(index uint64, stop <-chan struct{}) error
	SyncDeferred() error
}

// unapplied reports whether gate let an entry through unapplied.
func (w *leaderWrites) unapplied() bool { return w != nil && w.skipped.Load() }

// errNotApplied is the state machine's answer for an entry the node
// stopped before it reached its disk: it was not applied.
var errNotApplied = errors.New("holdfast: the node stopped before the entry reached its disk; not applied")

func newLeaderWrites() *leaderWrites { return &leaderWrites{kick: make(chan struct{}, 1)} }

// decide reports whether an append of logs may return before its sync:
// on the leader of more than one voter (alone, the commit comes right
// after the append and nothing could go on beside the sync), for a batch
// of commands only.
func (w *leaderWrites) decide(logs []*raft.Log) bool {
	r := w.raft.Load()
	if r == nil || r.State() != raft.Leader {
		return false
	}
	for _, l := range logs {
		if l.Type != raft.LogCommand {
			return false
		}
	}
	// GetConfiguration reads raft's latest configuration without its main
	// loop (the caller here).
	return w.voters.count(r.GetConfiguration().Configuration().Servers) > 1
}

// deferred wakes run after an append whose sync was deferred.
func (w *leaderWrites) deferred() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run syncs each deferred append until stop is closed (Close syncs what
// is left).
func (w *leaderWrites) run(stop <-chan struct{}, log *slog.Logger) {
	for {
		select {
		case <-stop:
			return
		case <-w.kick:
			if err := w.log.SyncDeferred(); err != nil {
				log.Error("raft log: a leader's deferred sync failed; this node applies nothing more until it is restarted", "error", err)
			}
		}
	}
}

// gate returns once the entry at index is on this node's disk (syncing a
// deferred append itself if run has not yet), or errNotApplied once stop is
// closed first.
func (w *leaderWrites) gate(index uint64, stop <-chan struct{}) error {
	if w == nil || w.log == nil || w.log.Durable() >= index {
		return nil
	}
	// Sync here rather than wait for run to, when it has not woken yet (a
	// loaded host): the wait would only add its wake-up.
	err := w.log.SyncDeferred()
	if err == nil {
		err = w.log.WaitDurable(index, stop)
	}
	if err != nil {
		<-stop // never on disk here: apply nothing until the node stops
		w.skipped.Store(true)
		return errNotApplied
	}
	return nil
}

// clamp returns the commit index an AppendEntries may carry: commit, or
// less while the leader's own copy is not on disk.
func (w *leaderWrites) clamp(commit uint64) uint64 {
	if w == nil || w.log == nil {
		return commit
	}
	return min(commit, w.log.Durable())
}
