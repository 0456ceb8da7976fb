package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenWaitsWhileHeld: a node whose Held says no (its raft storage
// failing) opens no session, however long it is held; once Held clears,
// it opens one.
func TestOpenWaitsWhileHeld(t *testing.T) {
	r := newClientRig(t, 3*time.Second)
	var held atomic.Bool
	var asked atomic.Int64
	held.Store(true)
	r.c.o.Held = func() error {
		asked.Add(1)
		if held.Load() {
			return errors.New("raft storage failing")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := make(chan *Session, 1)
	go func() { opened <- r.c.open(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for asked.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatal("open never asked Held")
		}
		time.Sleep(time.Millisecond)
	}
	if n := r.creates.Load(); n != 0 {
		t.Fatalf("%d sessions created while held", n)
	}
	held.Store(false)
	s := <-opened
	if s == nil || r.creates.Load() != 1 {
		t.Fatalf("once no longer held: session %v, %d creates", s, r.creates.Load())
	}
	s.End(context.Canceled)
}
