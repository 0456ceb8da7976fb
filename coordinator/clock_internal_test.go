package coordinator

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Clock that only moves when told.
type fakeClock struct{ now atomic.Int64 }

func (f *fakeClock) Now() time.Duration { return time.Duration(f.now.Load()) }

// TestBootTimerSeesAJump: a deadline hours away on the clock fires within a
// few steps of the clock jumping past it (as after a suspend), and not
// before.
func TestBootTimerSeesAJump(t *testing.T) {
	clk := &fakeClock{}
	fired := make(chan struct{})
	bt := afterBoot(clk, time.Hour, 5*time.Millisecond, func() { close(fired) })
	defer bt.Stop()
	// Several steps pass on Go's clock while the fake clock stands still.
	select {
	case <-fired:
		t.Fatal("fired before the clock reached the deadline")
	case <-time.After(50 * time.Millisecond):
	}
	clk.now.Store(int64(2 * time.Hour))
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("did not fire after the clock jumped past the deadline")
	}
}

// TestBootTimerStop: a stopped timer never runs f.
func TestBootTimerStop(t *testing.T) {
	clk := &fakeClock{}
	ran := make(chan struct{}, 1)
	bt := afterBoot(clk, time.Hour, time.Millisecond, func() { ran <- struct{}{} })
	bt.Stop()
	clk.now.Store(int64(2 * time.Hour))
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
