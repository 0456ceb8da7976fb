package raftnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// maxReadIndexScan bounds how far back a read index looks for a command
// among non-command log entries (configuration changes, barriers) before
// it falls back to a barrier.
const maxReadIndexScan = 4096

// ConfirmFunc returns commit() as read once a quorum of voters confirmed
// that this node still leads (session.Lessor.ConfirmedCommit).
type ConfirmFunc func(ctx context.Context, commit func() uint64) (uint64, error)

// Reads serves consistent reads over a node: the leader's read index
// (ReadIndex, and wire.MethodSync for the other nodes) and Sync, which
// waits until this node's replica has applied it. It is a value the host
// builds when it needs one; it starts no goroutine.
type Reads struct {
	Node    *Node
	Replica *fsm.FSM
	Confirm ConfirmFunc
}

// Sync returns once the replica has applied every command the leader had
// committed when Sync was called, as confirmed by a quorum (the
// coordinator's Sync documents the contract). It retries, with backoff,
// until ctx ends: the error then wraps ctx's error and the last failure;
// wire.ErrShutdown once the node is shutting down.
func (r Reads) Sync(ctx context.Context) error {
	backoff := 20 * time.Millisecond
	for {
		if r.Node.closing() {
			return wire.ErrShutdown
		}
		index, err := r.askReadIndex(ctx)
		if err == nil {
			if _, err := r.Replica.Wait(ctx, index); err != nil {
				return fmt.Errorf("holdfast: sync: replica not at index %d yet: %w", index, err)
			}
			return nil
		}
		if errors.Is(err, wire.ErrShutdown) && r.Node.closing() {
			return wire.ErrShutdown
		}
		if !pause.For(ctx, pause.Jitter(backoff)) {
			return fmt.Errorf("holdfast: sync: %w (%w)", ctx.Err(), err)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// askReadIndex gets a read index from the leader (this node or another).
func (r Reads) askReadIndex(ctx context.Context) (uint64, error) {
	addr, self := r.Node.LeaderRPCAddr()
	switch {
	case self:
		return r.ReadIndex(ctx)
	case addr == "":
		return 0, wire.ErrNoLeader
	}
	var rep wire.SyncReply
	err := wire.FromRemote(r.Node.CallLeader(ctx, addr, wire.MethodSync, struct{}{}, &rep))
	return rep.Index, err
}

// ServeSync is the leader's handler of wire.MethodSync.
func (r Reads) ServeSync(ctx context.Context, _ []byte) ([]byte, error) {
	index, err := r.ReadIndex(ctx)
	if err != nil {
		return nil, err
	}
	return transport.Encode(wire.SyncReply{Index: index})
}

// ReadIndex is the leader's side of Sync: once the commands this node
// submitted before the request's arrival are answered (Node.Submit
// returns before the commit), Confirm confirms the commit index, and
// ReadIndex returns the index of the last command at or below it, once
// this node's replica has applied it.
func (r Reads) ReadIndex(ctx context.Context) (uint64, error) {
	if err := r.Node.WaitSubmitted(ctx); err != nil {
		return 0, err
	}
	commit, err := r.Confirm(ctx, r.Node.raft.CommitIndex)
	if err != nil {
		return 0, err
	}
	index, err := r.lastCommandAtOrBefore(ctx, commit)
	if err != nil {
		return 0, err
	}
	if _, err := r.Replica.Wait(ctx, index); err != nil {
		return 0, err
	}
	return index, nil
}

// lastCommandAtOrBefore returns the index of the last command entry at or
// below index, which is the replica index (fsm indexes count commands
// only) that covers every entry up to index. Entries already compacted
// into a snapshot are covered by the replica's current index.
func (r Reads) lastCommandAtOrBefore(ctx context.Context, index uint64) (uint64, error) {
	var entry raft.Log
	for i := index; i > 0 && index-i < maxReadIndexScan; i-- {
		if err := r.Node.LogStore().GetLog(i, &entry); err != nil {
			// Compacted: the replica applied it when it restored or took
			// the snapshot.
			return min(r.Replica.View().Index(), index), nil
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
	n := r.Node
	if _, err := Issue(ctx, n.opts.Futures, func() raft.Future { return n.raft.Barrier(n.opts.RPCTimeout) }); err != nil {
		return 0, err
	}
	return r.Replica.View().Index(), nil
}
