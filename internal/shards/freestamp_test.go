package shards

import (
	"testing"
	"time"
)

// TestFreeWaitAcrossTheWrap checks the 4-byte stamps of freeSeen: a wait
// reads back to the millisecond, also when the stamps wrap past 2^32 ms
// between the two, the stamp is never 0 (which means "not free"), and a
// start before the sighting reads as no wait.
func TestFreeWaitAcrossTheWrap(t *testing.T) {
	const wrap = time.Duration(1<<32) * time.Millisecond
	cases := []struct {
		seen, start time.Duration
		want        time.Duration
	}{
		{time.Second, 3 * time.Second, 2 * time.Second},
		{wrap - 500*time.Millisecond, wrap + 700*time.Millisecond, 1200 * time.Millisecond},
		{5*wrap + 10*time.Millisecond, 5*wrap + 50*time.Millisecond, 40 * time.Millisecond},
		{3 * time.Second, time.Second, 0},
		{0, 10 * time.Millisecond, 9 * time.Millisecond}, // seen at 0 is stamped 1 ms
	}
	for _, c := range cases {
		if got := freeWait(freeStamp(c.seen), freeStamp(c.start)); got != c.want {
			t.Errorf("seen %v, started %v: wait %v, want %v", c.seen, c.start, got, c.want)
		}
	}
	for _, d := range []time.Duration{0, 999 * time.Microsecond, wrap, 7 * wrap} {
		if freeStamp(d) == 0 {
			t.Errorf("freeStamp(%v) is 0, the mark of a shard not seen free", d)
		}
	}
}
