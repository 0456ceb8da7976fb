package raftnode

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// idlePark holds back the leader's replication loop of a non-voter while
// nothing changes. Raft's replication goroutine for a follower wakes every
// CommitTimeout (10-20 ms with DefaultLocalConfig) to repeat its last
// AppendEntries, which raftTransport answers from memory for a non-voter;
// with 60 non-voters that is still thousands of wake-ups, timers and
// requests built a second. So such an answer is given only once something
// changed (the leader stored new entries, its state machine applied a
// commit, raft stopped) or park passed, whichever is first. Before parking,
// the request is checked against raft's commit and last index: a request
// already behind them is answered at once, so raft sends the news on its
// next round. What parking delays is only the answer to a request that
// says nothing new. A commit the state machine does not apply
// (configuration, no-op, barrier entries) reaches a non-voter up to park
// later.
type idlePark struct {
	park  time.Duration
	state atomic.Pointer[func() (commit, last uint64)] // nil until raft runs: no parking

	parked atomic.Int32 // goroutines parked or about to park
	mu     sync.Mutex
	wake   chan struct{} // closed and replaced by changed
	done   chan struct{} // closed by stop
	once   sync.Once
}

func newIdlePark(park time.Duration) *idlePark {
	return &idlePark{park: park, wake: make(chan struct{}), done: make(chan struct{})}
}

// changed wakes every parked answer.
func (p *idlePark) changed() {
	if p.parked.Load() == 0 {
		return
	}
	p.mu.Lock()
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// stop wakes every parked answer and parks none after.
func (p *idlePark) stop() { p.once.Do(func() { close(p.done) }) }

// wait parks the caller until a change, stop or park, unless req is already
// behind raft's commit or last index (or raft is not running).
func (p *idlePark) wait(req *raft.AppendEntriesRequest) {
	state := p.state.Load()
	if state == nil || p.park <= 0 {
		return
	}
	p.parked.Add(1)
	defer p.parked.Add(-1)
	p.mu.Lock()
	wake := p.wake
	p.mu.Unlock()
	if commit, last := (*state)(); req.LeaderCommitIndex < commit || req.PrevLogEntry < last {
		return
	}
	t := time.NewTimer(p.park)
	defer t.Stop()
	select {
	case <-wake:
	case <-p.done:
	case <-t.C:
	}
}

// wakingLogs is the node's log store, waking parked answers after each
// append.
type wakingLogs struct {
	raft.LogStore
	changed func()
}

func (w wakingLogs) StoreLog(l *raft.Log) error {
	err := w.LogStore.StoreLog(l)
	w.changed()
	return err
}

func (w wakingLogs) StoreLogs(ls []*raft.Log) error {
	err := w.LogStore.StoreLogs(ls)
	w.changed()
	return err
}

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore).
func (w wakingLogs) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// wakingFSM is the node's state machine, waking parked answers after each
// applied entry. It applies an entry only once the entry is on this node's
// disk (leaderWrites.gate).
type wakingFSM struct {
	raft.FSM
	changed func()
	writes  *leaderWrites
	stop    <-chan struct{} // closed once raft's shutdown has begun (nil: never)
}

func (w wakingFSM) Apply(l *raft.Log) any {
	if err := w.writes.gate(l.Index, w.stop); err != nil {
		return err
	}
	r := w.FSM.Apply(l)
	w.changed()
	return r
}

// Snapshot is the state machine's, unless an entry was let through
// unapplied (the node stopping before the entry reached its disk): then
// the state does not match raft's applied index, and is not saved.
func (w wakingFSM) Snapshot() (raft.FSMSnapshot, error) {
	if w.writes.unapplied() {
		return nil, errNotApplied
	}
	return w.FSM.Snapshot()
}
