package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// methodSync asks the leader for a read index (part of the wire protocol).
const methodSync = wire.MethodSync

type syncReply = wire.SyncReply

// maxReadIndexScan bounds how far back readIndex looks for a command among
// non-command log entries (configuration changes, barriers) before it
// falls back to a barrier.
const maxReadIndexScan = 4096

// Sync returns once this node's replica has applied every command the
// raft leader had committed when Sync was called, as confirmed by a quorum
// of voters: a read of Owner, Table, Leases or Session after Sync returns
// reflects every write committed before the call (what etcd's
// linearizable reads and ZooKeeper's sync() give). It costs a round trip
// to the leader and a confirmation round with the voters (shared with
// concurrent keepalives and Syncs). Without a leader, or with a leader
// that cannot confirm its leadership (it lost its quorum), Sync keeps
// retrying until ctx ends and then returns an error wrapping ctx's error
// and the last failure (ErrNoLeader, or a network error);
// ErrShutdown once the node is shutting down.
func (c *Coordinator) Sync(ctx context.Context) error {
	backoff := 20 * time.Millisecond
	for {
		if c.closing() {
			return ErrShutdown
		}
		index, err := c.askReadIndex(ctx)
		if err == nil {
			if _, err := c.fsm.Wait(ctx, index); err != nil {
				return fmt.Errorf("holdfast: sync: replica not at index %d yet: %w", index, err)
			}
			return nil
		}
		if errors.Is(err, ErrShutdown) && c.closing() {
			return ErrShutdown
		}
		if !sleepCtx(ctx, jitter(backoff)) {
			return fmt.Errorf("holdfast: sync: %w (%w)", ctx.Err(), err)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// askReadIndex gets a read index from the leader (this node or another).
func (c *Coordinator) askReadIndex(ctx context.Context) (uint64, error) {
	addr, self := c.leaderRPCAddr()
	switch {
	case self:
		return c.readIndex(ctx)
	case addr == "":
		return 0, ErrNoLeader
	}
	var rep syncReply
	err := fromRemote(c.trans.Call(ctx, addr, methodSync, struct{}{}, &rep))
	return rep.Index, err
}

// serveSync answers another node's Sync as leader.
func (c *Coordinator) serveSync(ctx context.Context) ([]byte, error) {
	index, err := c.readIndex(ctx)
	if err != nil {
		return nil, toRemote(err)
	}
	return transport.Encode(syncReply{Index: index})
}

// readIndex is the leader's side of Sync: the lessor confirms the commit
// index at the request's arrival (session.Lessor.ConfirmedCommit), and
// readIndex returns the index of the last command at or below it, once
// this node's replica has applied it.
func (c *Coordinator) readIndex(ctx context.Context) (uint64, error) {
	commit, err := c.lessor.ConfirmedCommit(ctx, c.raft.CommitIndex)
	if err != nil {
		return 0, err
	}
	index, err := c.lastCommandAtOrBefore(ctx, commit)
	if err != nil {
		return 0, err
	}
	if _, err := c.fsm.Wait(ctx, index); err != nil {
		return 0, err
	}
	return index, nil
}

// lastCommandAtOrBefore returns the index of the last command entry at or
// below index, which is the replica index (fsm indexes count commands
// only) that covers every entry up to index. Entries already compacted
// into a snapshot are covered by the replica's current index.
func (c *Coordinator) lastCommandAtOrBefore(ctx context.Context, index uint64) (uint64, error) {
	var entry raft.Log
	for i := index; i > 0 && index-i < maxReadIndexScan; i-- {
		if err := c.node.LogStore().GetLog(i, &entry); err != nil {
			// Compacted: the replica applied it when it restored or took
			// the snapshot.
			return min(c.fsm.View().Index(), index), nil
		}
		if entry.Type == raft.LogCommand {
			return i, nil
		}
	}
	if index < maxReadIndexScan {
		return 0, nil
	}
	// A long run of non-command entries: a barrier makes the replica apply
	// everything before it, and then its index covers them.
	if _, err := issue(ctx, &c.futs, func() raft.Future { return c.raft.Barrier(c.cfg.RPCTimeout) }); err != nil {
		return 0, err
	}
	return c.fsm.View().Index(), nil
}

// leaderWatch records since when this node has known no raft leader.
type leaderWatch struct {
	mu    sync.Mutex
	since time.Time // zero while a leader is known
}

// NoLeaderSince returns, while this node knows no raft leader, since when
// (on this node's clock) it has known none, and true; its replica may then
// be stale (Owner, Table and Leases show the state as of the last leader it
// heard from). It returns false while a leader is known.
func (c *Coordinator) NoLeaderSince() (time.Time, bool) {
	_, known := c.RaftLeader()
	w := &c.noLeader
	w.mu.Lock()
	defer w.mu.Unlock()
	if known {
		w.since = time.Time{}
		return time.Time{}, false
	}
	if w.since.IsZero() {
		w.since = time.Now() // an observation not seen yet
	}
	return w.since, true
}

// leaderWatchLoop follows raft's leader observations into c.noLeader.
func (c *Coordinator) leaderWatchLoop() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	c.raft.RegisterObserver(obs)
	defer c.raft.DeregisterObserver(obs)
	for {
		select {
		case <-c.ctx.Done():
			return
		case o := <-ch:
			lo, _ := o.Data.(raft.LeaderObservation)
			w := &c.noLeader
			w.mu.Lock()
			switch {
			case lo.LeaderID != "":
				w.since = time.Time{}
			case w.since.IsZero():
				w.since = time.Now()
			}
			w.mu.Unlock()
		}
	}
}
