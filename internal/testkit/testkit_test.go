package testkit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// A manual clock stands still until moved; a jumping one runs with its
// base and jumps forward.
func TestClock(t *testing.T) {
	origin := time.Unix(1000, 0)
	c := NewClock(origin)
	if c.Now() != 0 || !c.Time().Equal(origin) {
		t.Fatalf("new clock: %v, %v", c.Now(), c.Time())
	}
	c.Advance(time.Second)
	c.Advance(time.Second)
	if c.Now() != 2*time.Second || !c.Time().Equal(origin.Add(2*time.Second)) {
		t.Fatalf("after two advances: %v, %v", c.Now(), c.Time())
	}
	c.Set(time.Minute)
	if c.Now() != time.Minute {
		t.Fatalf("after Set: %v", c.Now())
	}
	var zero Clock
	if zero.Now() != 0 {
		t.Fatalf("zero clock reads %v", zero.Now())
	}
	base := NewClock(time.Time{})
	j := NewJumpClock(base)
	base.Set(time.Second)
	j.Advance(time.Hour)
	if j.Now() != time.Hour+time.Second {
		t.Fatalf("jump clock: %v, want base plus the jump", j.Now())
	}
}

// Poll returns at once once the condition holds, and its last error when
// it never does.
func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(time.Minute, func() error {
		n++
		if n < 3 {
			return ErrNotYet
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll: %v after %d calls, want nil after 3", err, n)
	}
	last := errors.New("still missing")
	if err := Poll(0, func() error { return last }); err != last {
		t.Fatalf("Poll past its deadline: %v, want the last error", err)
	}
	if err := Holds(func() bool { return false })(); !errors.Is(err, ErrNotYet) {
		t.Fatalf("Holds(false): %v", err)
	}
	Eventually(t, "a condition that holds", time.Minute, Holds(func() bool { return true }))
}

// Lines keeps complete lines in order, holds a partial one back and hands
// out copies.
func TestLines(t *testing.T) {
	var o Lines
	for _, w := range []string{"a", "b\nc", "\n", "", "d\ne\nf"} {
		if n, err := o.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	got := o.Lines()
	if want := []string{"ab", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("Lines() = %q, want %q (the partial %q held back)", got, want, "f")
	}
	got[0] = "changed"
	if o.Lines()[0] != "ab" {
		t.Fatal("Lines returned the collector's own slice, not a copy")
	}
}

func TestOwnDir(t *testing.T) {
	if got, want := OwnDir("/tmp/shared"), fmt.Sprintf("/tmp/shared-%d", os.Getuid()); got != want {
		t.Errorf("OwnDir = %q, want %q", got, want)
	}
}
