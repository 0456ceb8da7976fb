package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/logbridge"
	"github.com/holdfast-go/holdfast/internal/walog"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// Timing is raft's timing and log-compaction configuration: the facade's
// Config.Raft (RaftConfig mirrors it field for field and converts to it).
type Timing struct {
	// HeartbeatTimeout is how long a follower waits without contact from the
	// leader before it starts an election.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits before a new election.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without contact
	// from a quorum. It must not exceed HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout bounds how long an idle leader waits before it sends
	// heartbeats carrying the commit index.
	CommitTimeout time.Duration
	// SnapshotThreshold is how many log entries raft keeps before it takes
	// a snapshot.
	SnapshotThreshold uint64
	// TrailingLogs is how many log entries are kept after a snapshot.
	TrailingLogs uint64
	// LogSegmentSize is the size of the write-ahead log's segment files,
	// each preallocated to it (0: 8 MiB; at least 64 KiB otherwise).
	// Smaller segments are compacted sooner and reserve less disk; a disk
	// that fills is noticed at the next segment.
	LogSegmentSize int64
}

// FieldError is a Timing rule broken, naming the facade's Config field.
type FieldError struct{ Field, Msg string }

// Error is the field at fault and what is wrong with it.
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ConfigField returns the field at fault and what is wrong with it.
func (e *FieldError) ConfigField() (field, msg string) { return e.Field, e.Msg }

// Check returns the first broken timing rule (as Config.Raft.<field>), or
// nil. SnapshotThreshold is checked apart (CheckSnapshot), last of all.
func (t Timing) Check() error {
	const floor = 5 * time.Millisecond
	switch {
	case t.HeartbeatTimeout < floor:
		return &FieldError{"Raft.HeartbeatTimeout", fmt.Sprintf("is %v; must be at least 5ms", t.HeartbeatTimeout)}
	case t.ElectionTimeout < floor:
		return &FieldError{"Raft.ElectionTimeout", fmt.Sprintf("is %v; must be at least 5ms", t.ElectionTimeout)}
	case t.LeaderLeaseTimeout < floor || t.LeaderLeaseTimeout > t.HeartbeatTimeout:
		return &FieldError{"Raft.LeaderLeaseTimeout",
			fmt.Sprintf("is %v; must be between 5ms and HeartbeatTimeout (%v)", t.LeaderLeaseTimeout, t.HeartbeatTimeout)}
	case t.CommitTimeout <= 0:
		return &FieldError{"Raft.CommitTimeout", "must be positive"}
	case t.LogSegmentSize != 0 && t.LogSegmentSize < 64<<10:
		return &FieldError{"Raft.LogSegmentSize", fmt.Sprintf("is %d bytes; must be 0 (8 MiB) or at least 64 KiB", t.LogSegmentSize)}
	}
	return nil
}

// CheckSnapshot checks SnapshotThreshold.
func (t Timing) CheckSnapshot() error {
	if t.SnapshotThreshold == 0 {
		return &FieldError{"Raft.SnapshotThreshold", "must be positive"}
	}
	return nil
}

// Options are what a Node needs from its host.
type Options struct {
	// ID is the raft server ID (see LoadIdentity).
	ID string
	// DataDir holds the raft stores (under DataDir/raft); "" keeps them in
	// memory.
	DataDir string
	// LogFS is the file system of the write-ahead log (nil: the operating
	// system's); the rest of the data dir is always on the real one.
	LogFS walog.FS
	// Timing is raft's timing and log compaction.
	Timing Timing
	// RPCTimeout bounds raft requests made without a deadline.
	RPCTimeout time.Duration
	// Trans carries raft's traffic (its stream layer) and the forwarded
	// commands.
	Trans *transport.Transport
	// FSM is the replicated state machine.
	FSM raft.FSM
	// NotifyCh receives raft's leadership changes (raft.Config.NotifyCh).
	NotifyCh chan bool
	// Futures counts the raft futures in flight; the host issues its own
	// raft requests through it too (see Issue). Stop closes it.
	Futures *Futures
	// Context ends when the host begins to shut down: proposals then fail
	// with wire.ErrShutdown, and raft's logs are muted.
	Context context.Context
	// Log receives the node's and raft's logs (nil: discarded).
	Log *slog.Logger
	// Metrics are bound to the node by Start (nil: none); Applied is the
	// replica's applied index they report (nil: 0).
	Metrics *Metrics
	Applied func() uint64
	// Cluster returns the cluster this node's data dir belongs to ("" while
	// it belongs to none): once it is known, raft traffic from servers that
	// do not belong to it never reaches raft (see guard). Nil: no check.
	Cluster func() string
	// LeaderChanged returns a channel closed when raft next reports a
	// change of leader (LeaderWatch.Changed): a command or read forwarded
	// to a leader is then abandoned (nil: forwards wait for their answer
	// or their context).
	LeaderChanged func() <-chan struct{}
}

// Node is a started raft server with its stores.
type Node struct {
	opts      Options
	log       *slog.Logger
	raft      *raft.Raft
	raftTrans *raft.NetworkTransport
	trans     *raftTransport
	idle      *idlePark
	stores    *stores

	spawnMu    sync.Mutex
	stopped    bool // Stop began: spawn refuses
	wg         sync.WaitGroup
	dupForward atomic.Pointer[func() (time.Duration, bool)]
	submitMu   sync.Mutex                   // orders acceptAsLeader's hand-offs to raft with lastSubmit
	lastSubmit atomic.Pointer[pendingApply] // the last command acceptAsLeader took in
	dupsSent   atomic.Int64
	hint       leaderHint // the leader a replica outside raft was told of (leaderhint.go)
}

// Start opens the stores and starts raft. On error nothing is left open.
func Start(opts Options) (*Node, error) {
	n := &Node{opts: opts, log: opts.Log}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	writes := newLeaderWrites()
	st, err := openStores(opts.DataDir, n.log, n.closing, storeOptions{
		segmentSize: opts.Timing.LogSegmentSize, count: opts.Metrics.storageError, fs: opts.LogFS, writes: writes})
	if err != nil {
		return nil, err
	}
	n.raftTrans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  opts.Trans.StreamLayer(),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  logbridge.HCLog(n.log, "raft-net", n.closing),
	})
	g := newGuard(opts.Cluster, n.askIdentity, opts.RPCTimeout, n.log)
	trans := newRaftTransport(n.raftTrans, opts.Timing.HeartbeatTimeout, g)
	trans.writes = writes
	if st.guard != nil {
		st.guard.self = []byte(transport.RaftAddress(opts.Trans.Addr(), opts.ID))
	}
	n.idle = trans.idle
	logs := wakingLogs{LogStore: st.logs, changed: trans.idle.changed}
	fsm := wakingFSM{FSM: opts.FSM, changed: trans.idle.changed, writes: writes}
	if st.guard != nil {
		fsm.stop = st.guard.stop
	}
	r, err := raft.NewRaft(n.raftConfig(), fsm, logs, st.stable, st.snaps, trans)
	if err != nil {
		n.raftTrans.Close()
		trans.stopRPCs()
		if st.closer != nil {
			st.closer.Close()
		}
		return nil, fmt.Errorf("holdfast: starting raft: %w", err)
	}
	n.stores, n.raft, n.trans = st, r, trans
	trans.useRaft(r)
	n.spawn(trans.run)
	if writes.log != nil && st.guard != nil {
		writes.raft.Store(r)
		n.spawn(func() { writes.run(st.guard.stop, n.log) })
	}
	opts.Metrics.bind(n)
	return n, nil
}

// askIdentity asks the node at rpcAddr which node and cluster it is
// (wire.MethodIdentity), for the guard.
func (n *Node) askIdentity(ctx context.Context, rpcAddr string) (wire.IdentityReply, error) {
	var rep wire.IdentityReply
	err := n.opts.Trans.Call(ctx, rpcAddr, wire.MethodIdentity, struct{}{}, &rep)
	return rep, wire.FromRemote(err)
}

// spawn runs f in a goroutine Stop joins, unless Stop began.
func (n *Node) spawn(f func()) {
	n.spawnMu.Lock()
	defer n.spawnMu.Unlock()
	if n.stopped {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// closing reports whether the host began to shut down.
func (n *Node) closing() bool { return n.opts.Context.Err() != nil }

// Raft returns the raft server.
func (n *Node) Raft() *raft.Raft { return n.raft }

// LogStore returns raft's log store.
func (n *Node) LogStore() raft.LogStore { return n.stores.logs }

// Stop refuses new raft futures and waits (up to RPCTimeout) for the ones
// in flight, shuts raft and its network transport down, and joins the
// node's goroutines. The host's context must have ended (they watch it).
// The stores stay open: CloseStores closes them.
func (n *Node) Stop() error {
	if c := n.opts.Futures.Close(n.opts.RPCTimeout); c > 0 {
		n.log.Warn("raft requests still unanswered at shutdown", "count", c)
	}
	n.idle.stop() // no parked answer holds raft's shutdown up
	shutdown := n.raft.Shutdown()
	if n.stores.guard != nil {
		n.stores.guard.shutdown() // a term write waiting for the disk lets raft stop
	}
	err := errors.Join(shutdown.Error(), n.raftTrans.Close())
	n.trans.stopRPCs()
	n.spawnMu.Lock()
	n.stopped = true
	n.spawnMu.Unlock()
	n.wg.Wait()
	return err
}

// StorageHealth is the state of this node's raft storage (always OK in
// memory).
func (n *Node) StorageHealth() StorageHealth { return n.stores.health.health() }

// StorageBlocking returns why this node must not take a new session (its
// raft log cannot take appends, or its term and vote cannot be saved), or
// nil.
func (n *Node) StorageBlocking() error { return n.stores.health.blocking() }

// CloseStores closes the stores, after Stop and once nothing reads them.
func (n *Node) CloseStores() error {
	if n.stores.closer == nil {
		return nil
	}
	return n.stores.closer.Close()
}

// HasState reports whether this node has ever been part of a raft
// configuration (bootstrapped, or replicated to).
func (n *Node) HasState() bool {
	if n.raft.LastIndex() > 0 {
		return true
	}
	f := n.raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// Address is this node's address as raft knows it.
func (n *Node) Address() raft.ServerAddress {
	return transport.RaftAddress(n.opts.Trans.Addr(), n.opts.ID)
}

// Servers returns the current raft configuration, or nil when it cannot be
// read (shutting down).
func (n *Node) Servers() []raft.Server {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// LeaderRPCAddr returns the current leader's RPC address ("" if unknown),
// and whether this node is the leader.
func (n *Node) LeaderRPCAddr() (addr string, self bool) {
	a, id := n.LeaderWithID()
	if a == "" {
		return "", false
	}
	if string(id) == n.opts.ID {
		return n.opts.Trans.Addr(), true
	}
	host, _, err := transport.SplitRaftAddress(a)
	if err != nil {
		return "", false
	}
	return host, false
}

// SetDupForward makes Apply send every lease command it forwards a second
// time when dup says so, after the delay it returns (nil turns it off):
// tests use it to check that a late duplicate changes nothing.
func (n *Node) SetDupForward(dup func() (time.Duration, bool)) {
	if dup == nil {
		n.dupForward.Store(nil)
		return
	}
	n.dupForward.Store(&dup)
}

// DupsSent counts the duplicates whose call returned.
func (n *Node) DupsSent() int64 { return n.dupsSent.Load() }
