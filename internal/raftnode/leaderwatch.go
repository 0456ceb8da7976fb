package raftnode

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// LeaderWatch records since when a node has known no raft leader, and
// tells who waits (Changed) when the leader it knows changes. Its zero
// value knows a leader; Start marks the node leaderless from then on, and
// Run follows raft's leader observations.
type LeaderWatch struct {
	mu      sync.Mutex
	since   time.Time     // zero while a leader is known
	changed chan struct{} // closed and replaced at each leader observation
}

// Changed returns a channel closed the next time raft reports a change of
// leader (another node, or none).
func (w *LeaderWatch) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// Start records that no leader is known as of now (a node starting).
func (w *LeaderWatch) Start() {
	w.mu.Lock()
	w.since = time.Now()
	w.mu.Unlock()
}

// Since returns, while no leader is known (known is false), since when
// (on this node's clock) none has been, and true. It returns false while
// a leader is known.
func (w *LeaderWatch) Since(known bool) (time.Time, bool) {
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

// Run follows r's leader observations until ctx ends.
func (w *LeaderWatch) Run(ctx context.Context, r *raft.Raft) {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(obs)
	defer r.DeregisterObserver(obs)
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-ch:
			lo, _ := o.Data.(raft.LeaderObservation)
			w.Notify(lo.LeaderID != "")
		}
	}
}
