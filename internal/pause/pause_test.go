package pause

import (
	"context"
	"testing"
	"time"
)

func TestJitterStaysWithinTenPercent(t *testing.T) {
	if Jitter(0) != 0 || Jitter(-time.Second) != 0 {
		t.Fatal("Jitter of a non-positive duration is not 0")
	}
	for range 1000 {
		if d := Jitter(time.Second); d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("Jitter(1s) = %v, outside ±10%%", d)
		}
	}
}

func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if For(ctx, time.Hour) {
		t.Fatal("For reported the hour elapsed after its context ended")
	}
	if !For(context.Background(), time.Millisecond) {
		t.Fatal("For(1ms) did not report the duration elapsed")
	}
}
