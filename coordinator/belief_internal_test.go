package coordinator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestCheckpointRule: Checkpoint passes while at least LeaseMargin is left
// on the clock, fails with an *ExpiringError (ErrLeaseExpiring) saying how
// much is left below the margin, and once the clock reaches the session's
// deadline (a jump, as after a suspend) fails with ErrLeaseLost wrapping
// ErrSessionExpired; Err and Remaining agree.
func TestCheckpointRule(t *testing.T) {
	const margin = time.Second
	clk := &testkit.Clock{}
	s := session.New(context.Background(), "s", 10*time.Second, clk, time.Millisecond)
	defer s.End(ErrShutdown)
	until := 10 * time.Second
	s.Extend(time.Now().Add(until), until)
	b := &belief{margin: margin, life: session.NewBelief(s)}

	clk.Set(until - margin)
	if err := b.Checkpoint(); err != nil {
		t.Fatalf("Checkpoint with exactly the margin left: %v", err)
	}
	clk.Set(until - margin/2)
	var ee *ExpiringError
	if err := b.Checkpoint(); !errors.As(err, &ee) || !errors.Is(err, ErrLeaseExpiring) || ee.Remaining != margin/2 {
		t.Fatalf("Checkpoint with half the margin left: %v, want an *ExpiringError with %v left", err, margin/2)
	}
	if b.Err() != nil {
		t.Fatalf("Err while the belief holds: %v", b.Err())
	}
	clk.Set(until)
	if err := b.Checkpoint(); !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Checkpoint at the deadline: %v, want ErrLeaseLost wrapping ErrSessionExpired", err)
	}
	if !errors.Is(b.Err(), ErrSessionExpired) || b.Remaining() != 0 {
		t.Fatalf("after the deadline: Err %v, Remaining %v", b.Err(), b.Remaining())
	}
}

// BenchmarkBeliefCheckpoint measures Checkpoint on the system clock (one
// clock read per call).
func BenchmarkBeliefCheckpoint(b *testing.B) {
	clk := SystemClock()
	s := session.New(context.Background(), "s", time.Hour, clk, time.Second)
	s.Extend(time.Now().Add(time.Hour), clk.Now()+time.Hour)
	defer s.End(ErrShutdown)
	bl := &belief{margin: time.Second, life: session.NewBelief(s)}
	for b.Loop() {
		if err := bl.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
}
