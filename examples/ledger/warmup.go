package main

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// shardState is what a worker loads before its first write: the shard's
// rows (their count and the highest seq), standing for the state a real
// service reads from its store before it serves a shard.
type shardState struct {
	rows, seq int64
}

// load reads the shard's state: its rows, then -shard-warmup more, which
// stands for a large state. It fails when ctx ends first.
func (ws *workers) load(ctx context.Context, shard int64) (shardState, error) {
	var st shardState
	err := ws.led.db.QueryRowContext(ctx, "SELECT count(*), coalesce(max(seq), 0) FROM writes WHERE shard = ?", shard).
		Scan(&st.rows, &st.seq)
	if err != nil {
		return st, err
	}
	if ws.warmup > 0 {
		t := time.NewTimer(ws.warmup)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return st, context.Cause(ctx)
		}
	}
	return st, nil
}

// Prepare warms shard s up before holdfast hands it to this node (a
// planned move from from): it loads the shard's state while the old owner
// still serves, and keeps it for Acquire. The state is dropped if the move
// is abandoned (coordinator.ErrMoveAbandoned).
func (ws *workers) Prepare(ctx context.Context, s coordinator.ShardID, from coordinator.Holder) error {
	ws.out.say("preparing", "shard", s, "from", from.Node, "token", from.Token)
	st, err := ws.load(ctx, int64(s))
	if err != nil {
		if errors.Is(err, coordinator.ErrMoveAbandoned) {
			ws.out.say("prepare-abandoned", "shard", s)
			return nil
		}
		if ctx.Err() != nil {
			return nil // granted meanwhile: the worker loads for itself
		}
		return err
	}
	ws.mu.Lock()
	ws.warm[s] = st
	ws.mu.Unlock()
	ws.out.say("prepared", "shard", s, "rows", st.rows)
	context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), coordinator.ErrMoveAbandoned) {
			ws.mu.Lock()
			delete(ws.warm, s)
			ws.mu.Unlock()
			ws.out.say("prepare-abandoned", "shard", s)
		}
	})
	return nil
}

// warmState returns the state Prepare loaded for shard s, or loads it (a
// cold start: the shard came without a prepare, or before it was ready).
func (ws *workers) warmState(ctx context.Context, s coordinator.ShardID) (shardState, bool, error) {
	ws.mu.Lock()
	st, ok := ws.warm[s]
	delete(ws.warm, s)
	ws.mu.Unlock()
	if ok {
		return st, true, nil
	}
	st, err := ws.load(ctx, int64(s))
	return st, false, err
}

// announceNext tells, at the start of a drain, where requests for the
// shard go meanwhile: the next owner the leader named (a service would
// forward the requests it receives during its drain there).
func (ws *workers) announceNext(l *coordinator.ShardLease) {
	if next, ok := l.NextOwner(); ok {
		ws.out.say("forwarding", "shard", l.Shard(), "token", l.Token(), "to", next.Node, "addr", next.Addr)
	}
}
