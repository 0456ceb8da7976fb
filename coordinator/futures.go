package coordinator

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// futures counts the raft futures the coordinator is waiting on, so that
// Close can let them resolve before it shuts raft down.
//
// hashicorp/raft v1.7.3 hands committed entries to its FSM goroutine over a
// buffered channel, and that goroutine returns at Shutdown without draining
// it: the future of an entry committed just before Shutdown is never
// answered, and whoever waits on it waits forever. Every raft future here is
// therefore waited on through wait, which gives up when its context ends,
// and issued only through issue, which refuses once closing began; Close
// then waits (bounded) for the ones in flight before raft.Shutdown.
type futures struct {
	mu     sync.Mutex
	closed bool
	n      int           // futures issued and not yet answered
	idle   chan struct{} // after close: closed once n reaches 0
}

// issue calls mk (which starts a raft request and returns its future) and
// waits for the future or ctx, whichever ends first. Once closing began it
// returns ErrShutdown without calling mk.
func issue[F raft.Future](ctx context.Context, fs *futures, mk func() F) (F, error) {
	fs.mu.Lock()
	if fs.closed {
		fs.mu.Unlock()
		var none F
		return none, ErrShutdown
	}
	fs.n++
	fs.mu.Unlock()
	f := mk()
	done := make(chan error, 1)
	go func() {
		err := f.Error()
		fs.done()
		done <- err
	}()
	select {
	case err := <-done:
		return f, err
	case <-ctx.Done():
		return f, ctx.Err()
	}
}

func (fs *futures) done() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.n--
	if fs.n == 0 && fs.idle != nil {
		close(fs.idle)
		fs.idle = nil
	}
}

// close refuses new futures and waits up to limit for the ones in flight
// to be answered; it reports how many were still unanswered.
func (fs *futures) close(limit time.Duration) int {
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
