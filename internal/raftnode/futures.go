package raftnode

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// Futures counts the raft futures a node is waiting on, so that closing
// can let them resolve before it shuts raft down. The zero value is ready
// to use.
//
// hashicorp/raft v1.7.3 hands committed entries to its FSM goroutine over a
// buffered channel, and that goroutine returns at Shutdown without draining
// it: the future of an entry committed just before Shutdown is never
// answered, and whoever waits on it waits forever. Every raft future here is
// therefore issued and waited on only through Issue, which gives up when its
// context ends and refuses once closing began; Close then waits (bounded)
// for the ones in flight before raft.Shutdown.
type Futures struct {
	mu     sync.Mutex
	closed bool
	n      int           // futures issued and not yet answered
	idle   chan struct{} // after close: closed once n reaches 0
}

// Issue calls mk (which starts a raft request and returns its future) and
// waits for the future or ctx, whichever ends first. Once closing began it
// returns wire.ErrShutdown without calling mk.
func Issue[F raft.Future](ctx context.Context, fs *Futures, mk func() F) (F, error) {
	p, err := StartFuture(fs, mk)
	if err != nil {
		var none F
		return none, err
	}
	return p.Wait(ctx)
}

// Pending is a raft future started through Futures (StartFuture), to be
// waited on with Wait.
type Pending[F raft.Future] struct {
	f    F
	done chan struct{} // closed once the future is answered (err set)
	err  error
}

// StartFuture calls mk (which starts a raft request and returns its
// future) and counts the future until it is answered, without waiting for
// it. Once closing began it returns wire.ErrShutdown without calling mk.
func StartFuture[F raft.Future](fs *Futures, mk func() F) (*Pending[F], error) {
	fs.mu.Lock()
	if fs.closed {
		fs.mu.Unlock()
		return nil, wire.ErrShutdown
	}
	fs.n++
	fs.mu.Unlock()
	p := &Pending[F]{f: mk(), done: make(chan struct{})}
	go func() {
		p.err = p.f.Error()
		fs.done()
		close(p.done)
	}()
	return p, nil
}

// Wait waits for the future or ctx, whichever ends first. It is safe for
// concurrent use; every call after the answer returns it.
func (p *Pending[F]) Wait(ctx context.Context) (F, error) {
	select {
	case <-p.done:
		return p.f, p.err
	case <-ctx.Done():
		return p.f, ctx.Err()
	}
}

// InFlight returns how many futures were issued and not yet answered.
func (fs *Futures) InFlight() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.n
}

func (fs *Futures) done() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.n--
	if fs.n == 0 && fs.idle != nil {
		close(fs.idle)
		fs.idle = nil
	}
}

// Close refuses new futures and waits up to limit for the ones in flight
// to be answered; it reports how many were still unanswered.
func (fs *Futures) Close(limit time.Duration) int {
	fs.mu.Lock()
	fs.closed = true
	if fs.n == 0 {
		fs.mu.Unlock()
		return 0
	}
	if fs.idle == nil {
		fs.idle = make(chan struct{})
	}
	idle := fs.idle
	fs.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
		return 0
	case <-t.C:
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.n
}

// IssueFuture starts a raft request with mk through the node's Futures and
// waits for its future or ctx (see Issue).
func (n *Node) IssueFuture(ctx context.Context, mk func() raft.Future) error {
	_, err := Issue(ctx, n.opts.Futures, mk)
	return err
}
