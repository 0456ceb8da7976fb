package leases

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
)

// Retry proposes again while the outcome is unknown, and stops at once on
// a refusal.
func TestRetryStopsAtCommitOrRefusal(t *testing.T) {
	h := newHarness(t)
	log := slog.New(slog.DiscardHandler)
	dropped := 0
	h.setFault(func(fsm.Command) fault {
		if dropped < 2 {
			dropped++
			return drop
		}
		return pass
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s := h.session()
	cmd := Lease.acquireCmd(Request{Kind: Lease, Name: "x"}, s.ID(), 1)
	if _, err := Retry(ctx, cmd, h.propose, log); err != nil {
		t.Fatalf("Retry after two lost attempts: %v", err)
	}
	if n := h.count(fsm.OpAcquire); n != 3 {
		t.Fatalf("Retry proposed %d times, want 3 (two lost, one committed)", n)
	}
	h.other("o")
	refused := Lease.acquireCmd(Request{Kind: Lease, Name: "x"}, "o", 1)
	if _, err := Retry(ctx, refused, h.propose, log); !errors.Is(err, errHeld) {
		t.Fatalf("Retry of a refused acquire: %v, want errHeld", err)
	}
	if n := h.count(fsm.OpAcquire); n != 4 {
		t.Fatalf("a refused acquire was proposed %d times, want once", n-3)
	}
}

// The part's own numbering waits for a session and numbers nothing once
// the caller's context has ended.
func TestNumberedRequests(t *testing.T) {
	s := session.New(context.Background(), "s1", time.Minute, session.SystemClock(), time.Second)
	defer s.End(errShutdown)
	next := numbered(func(context.Context) (*session.Session, error) { return s, nil })
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := next(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("numbering under an ended context: %v, want context.Canceled", err)
	}
	for want := uint64(1); want <= 2; want++ {
		got, req, err := next(context.Background())
		if err != nil || got != s || req != want {
			t.Fatalf("request = %v, %d, %v; want s1, %d", got, req, err, want)
		}
	}
}
