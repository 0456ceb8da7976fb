package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestBootTimerSeesAJump: a deadline hours away on the clock fires within a
// few steps of the clock jumping past it (as after a suspend), and not
// before.
func TestBootTimerSeesAJump(t *testing.T) {
	clk := &testkit.Clock{}
	fired := make(chan struct{})
	bt := afterBoot(clk, time.Hour, 5*time.Millisecond, func() { close(fired) })
	defer bt.Stop()
	// Several steps pass on Go's clock while the fake clock stands still.
	select {
	case <-fired:
		t.Fatal("fired before the clock reached the deadline")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Set(2 * time.Hour)
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("did not fire after the clock jumped past the deadline")
	}
}

// TestBootTimerStop: a stopped timer never runs f.
func TestBootTimerStop(t *testing.T) {
	clk := &testkit.Clock{}
	ran := make(chan struct{}, 1)
	bt := afterBoot(clk, time.Hour, time.Millisecond, func() { ran <- struct{}{} })
	bt.Stop()
	clk.Set(2 * time.Hour)
	again := afterBoot(clk, 0, time.Millisecond, func() { ran <- struct{}{} }) // due at once
	<-ran
	again.Stop()
	select {
	case <-ran:
		t.Fatal("a stopped timer ran")
	case <-time.After(20 * time.Millisecond):
	}
}

// TestSystemClockAdvances: the system clock moves forward with Go's clock.
func TestSystemClockAdvances(t *testing.T) {
	clk := SystemClock()
	a := clk.Now()
	start := time.Now()
	for time.Since(start) < 5*time.Millisecond {
	}
	if b := clk.Now(); b <= a {
		t.Fatalf("clock went from %v to %v", a, b)
	}
}

// errCapped is the cause the tests end a capped belief with.
var errCapped = errors.New("capped")

// TestCappedBeliefEndsAfterJump: a revoked shard lease's belief is capped
// at its session's deadline of that moment; when the clock jumps past the
// cap (a suspend) while the session itself was extended further, reads
// (Observe, as Err and Checkpoint do) see the cap passed at once, and the
// cap's timer ends the belief even without a read.
func TestCappedBeliefEndsAfterJump(t *testing.T) {
	for _, call := range []bool{true, false} {
		clk := &testkit.Clock{}
		s := New(context.Background(), "s", time.Hour, clk, 5*time.Millisecond)
		s.Extend(time.Now().Add(time.Hour), 2*time.Hour)
		b := NewBelief(s)
		b.CapAt(func(at time.Time) { b.End(errCapped, at, nil) })
		s.Extend(time.Now().Add(10*time.Hour), 10*time.Hour) // keepalives go on; the cap stays
		if b.Observe(); b.Cause() != nil {
			t.Fatalf("capped belief ended early: %v", b.Cause())
		}
		clk.Set(3 * time.Hour)
		if call {
			if r := b.Observe(); r != 0 {
				t.Fatalf("Observe after the cap: %v", r)
			}
			if err := b.Cause(); !errors.Is(err, errCapped) {
				t.Fatalf("cause after the clock passed the cap: %v", err)
			}
		}
		select {
		case <-b.Context().Done():
		case <-time.After(time.Minute):
			t.Fatalf("capped belief did not end after the clock jumped past its cap (call %v)", call)
		}
		if s.Context().Err() != nil {
			t.Fatal("the session ended too: the cap alone should have ended the belief")
		}
		s.End(context.Canceled)
	}
}

// BenchmarkBeliefObserve measures Observe (what Checkpoint costs) on the
// system clock (one clock read per call).
func BenchmarkBeliefObserve(b *testing.B) {
	clk := SystemClock()
	s := New(context.Background(), "s", time.Hour, clk, time.Second)
	s.Extend(time.Now().Add(time.Hour), clk.Now()+time.Hour)
	defer s.End(context.Canceled)
	bl := NewBelief(s)
	for b.Loop() {
		if bl.Observe() < time.Second || bl.Cause() != nil {
			b.Fatal("belief ended")
		}
	}
}
