package raftnode

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// chanFuture is a raft.Future answered when its channel delivers.
type chanFuture chan error

func (f chanFuture) Error() error { return <-f }

// TestFuturesCloseWaitsForInFlight checks that close waits for a future
// in flight to be answered, that issue refuses once closing began, and
// that a waiter whose context ended does not keep close from returning
// once its future is answered.
func TestFuturesCloseWaitsForInFlight(t *testing.T) {
	var fs Futures
	f := make(chanFuture, 1)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := Issue(ctx, &fs, func() raft.Future { return f })
		waited <- err
	}()
	waitFutures(t, &fs, "the future counted", func() bool { return fs.n == 1 })
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("issue with a cancelled context: %v, want context.Canceled", err)
	}
	closed := make(chan int, 1)
	go func() { closed <- fs.Close(time.Minute) }()
	waitFutures(t, &fs, "closing begun", func() bool { return fs.closed })
	called := false
	if _, err := Issue(context.Background(), &fs, func() raft.Future { called = true; return f }); !errors.Is(err, wire.ErrShutdown) || called {
		t.Fatalf("issue after close: err %v, mk called %v; want ErrShutdown and no call", err, called)
	}
	select {
	case n := <-closed:
		t.Fatalf("close returned (%d unanswered) before the future was answered", n)
	default:
	}
	f <- nil
	if n := <-closed; n != 0 {
		t.Fatalf("close reports %d unanswered futures, want 0", n)
	}
}

// TestFuturesCloseGivesUp checks that close returns after its limit when a
// future is never answered (the hashicorp/raft case it guards against),
// reporting it.
func TestFuturesCloseGivesUp(t *testing.T) {
	var fs Futures
	f := make(chanFuture, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Issue(ctx, &fs, func() raft.Future { return f }); !errors.Is(err, context.Canceled) {
		t.Fatalf("issue: %v, want context.Canceled", err)
	}
	if n := fs.Close(10 * time.Millisecond); n != 1 {
		t.Fatalf("close reports %d unanswered futures, want 1", n)
	}
	f <- nil // let the waiter goroutine end before the leak check
	waitFutures(t, &fs, "the waiter ended", func() bool { return fs.n == 0 })
}

// waitFutures polls cond (under fs.mu) until it holds, for at most 10 s.
func waitFutures(t *testing.T, fs *Futures, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, what, 10*time.Second, testkit.Holds(func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return cond()
	}))
}
