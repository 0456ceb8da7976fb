package feed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// Default limits of a server.
const (
	DefaultMaxWait  = 2 * time.Second
	DefaultMaxBatch = 256 << 10 // bytes of commands in one reply
	DefaultChunk    = 512 << 10 // bytes of snapshot in one reply
	DefaultLinger   = 5 * time.Millisecond
	DefaultMaxLag   = 512
)

// ServerOptions are a server's view of its node. Every field without a
// stated default is required.
type ServerOptions struct {
	// Replica is the node's own state machine.
	Replica *fsm.FSM
	// Logs is the node's raft log: the commands it serves.
	Logs raft.LogStore
	// Serving reports whether this node serves now (it is in the raft
	// configuration and its replica belongs to a formed cluster).
	Serving func() bool
	// Leader returns the raft leader as this node knows it: RPC address
	// and raft ID ("" when none is known).
	Leader func() (addr, id string)
	// LeaderChanged returns a channel closed at the next change of leader;
	// a held pull answers then, so replicas learn the new leader at once.
	// nil: pulls are held for MaxWait regardless.
	LeaderChanged func() <-chan struct{}
	// MaxWait bounds how long a pull is held (default DefaultMaxWait);
	// MaxBatch and Chunk bound a reply (defaults DefaultMaxBatch,
	// DefaultChunk).
	MaxWait         time.Duration
	MaxBatch, Chunk int
	// MaxLag is how many raft indexes a replica that starts (at index 0)
	// may be behind and still be sent the commands; further behind it is
	// sent a snapshot, which costs it one restore instead of every command
	// since (default DefaultMaxLag). A replica that already has a state is
	// sent the commands however far behind it is, as raft sends a
	// follower, as long as the log holds them: restoring a snapshot of a
	// large table costs more than the commands of a burst, and a replica
	// slowed by a burst that was sent snapshots fell further behind.
	MaxLag uint64
	// Linger is how long a held pull, woken by a new command, waits for
	// more before it answers (default DefaultLinger; negative: none), so
	// that a burst of commits costs each replica one reply, not one per
	// command. A replica that is behind is answered at once.
	Linger time.Duration
}

// Server answers pulls. It starts no goroutine; its handler runs in the
// RPC server's.
type Server struct {
	o ServerOptions

	mu   sync.Mutex
	snap []byte // the last snapshot encoded for a replica, at snapAt
	at   uint64
}

// NewServer returns a server over o.
func NewServer(o ServerOptions) *Server {
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	if o.MaxLag == 0 {
		o.MaxLag = DefaultMaxLag
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	return &Server{o: o}
}

// Serve answers one pull: a snapshot chunk when the request reads one;
// otherwise, once this node's replica is past req.From (or the leader
// changed, or MaxWait passed), the commands above req.From up to its
// applied index, or the first chunk of a snapshot when its log no longer
// holds the command after req.From.
func (s *Server) Serve(ctx context.Context, req PullRequest) (PullReply, error) {
	if !s.o.Serving() {
		return PullReply{}, ErrNotServing
	}
	if req.SnapIndex != 0 {
		return s.chunk(req.SnapIndex, req.SnapOffset)
	}
	v := s.wait(ctx, req.From)
	rep := s.reply(v)
	if v.Index() <= req.From {
		return rep, nil
	}
	if req.From == 0 && v.Index() > s.o.MaxLag {
		return s.snapshot(req.From, v.Index())
	}
	entries, err := s.entries(req.From, v.Index())
	if errors.Is(err, errCompacted) {
		return s.snapshot(req.From, v.Index())
	}
	if err != nil {
		return PullReply{}, err
	}
	rep.Entries = entries
	return rep, nil
}

// wait returns the replica's view once it is past from, the leader
// changed, MaxWait passed or ctx ended.
func (s *Server) wait(ctx context.Context, from uint64) *fsm.View {
	var changed <-chan struct{}
	if s.o.LeaderChanged != nil {
		changed = s.o.LeaderChanged()
	}
	t := time.NewTimer(s.o.MaxWait)
	defer t.Stop()
	for {
		v := s.o.Replica.View()
		if v.Index() > from {
			return v
		}
		select {
		case <-v.Changed():
			if n := s.o.Replica.View(); n.Index() > from && s.o.Linger > 0 {
				s.linger(ctx)
				return s.o.Replica.View()
			}
		case <-changed:
			return v
		case <-t.C:
			return v
		case <-ctx.Done():
			return v
		}
	}
}

// linger waits Linger, or until ctx ends.
func (s *Server) linger(ctx context.Context) {
	t := time.NewTimer(s.o.Linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *Server) reply(v *fsm.View) PullReply {
	addr, id := s.o.Leader()
	return PullReply{LeaderAddr: addr, LeaderID: id, Index: v.Index()}
}

var errCompacted = errors.New("feed: log compacted")

// entries reads the commands in (from, to] from the log, at most MaxBatch
// bytes of them (at least one). Every entry at or below to is committed
// (to is an applied index), so no later leader rewrites it.
func (s *Server) entries(from, to uint64) ([]Entry, error) {
	first, err := s.o.Logs.FirstIndex()
	if err != nil {
		return nil, err
	}
	if first == 0 || from+1 < first {
		return nil, errCompacted
	}
	var out []Entry
	size := 0
	var l raft.Log
	for i := from + 1; i <= to && size < s.o.MaxBatch; i++ {
		if err := s.o.Logs.GetLog(i, &l); err != nil {
			if len(out) == 0 {
				return nil, errCompacted // compacted under us
			}
			break
		}
		if l.Type != raft.LogCommand {
			continue
		}
		out = append(out, Entry{Index: l.Index, Term: l.Term, Data: l.Data})
		size += len(l.Data) + 16
	}
	return out, nil
}

// snapshot starts a replica at from on a snapshot: the one held when it is
// past from and within MaxLag of to (the applied index), else a fresh one.
func (s *Server) snapshot(from, to uint64) (PullReply, error) {
	s.mu.Lock()
	if s.at <= from || to-min(s.at, to) > s.o.MaxLag {
		b, at, err := s.o.Replica.EncodeSnapshotIndex()
		if err != nil {
			s.mu.Unlock()
			return PullReply{}, err
		}
		s.snap, s.at = b, at
	}
	at := s.at
	s.mu.Unlock()
	return s.chunk(at, 0)
}

// chunk returns the piece of the held snapshot at index from offset.
func (s *Server) chunk(index, offset uint64) (PullReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at != index || offset > uint64(len(s.snap)) {
		return PullReply{}, ErrSnapshotGone
	}
	end := min(offset+uint64(s.o.Chunk), uint64(len(s.snap)))
	rep := s.reply(s.o.Replica.View())
	rep.Snap = &SnapChunk{Index: index, Offset: offset, Total: uint64(len(s.snap)),
		Data: s.snap[offset:end]}
	return rep, nil
}
