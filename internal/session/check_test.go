package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// TestBeliefCheck: Check reports the time left while the belief holds,
// and once it ended tells this node's own release, an operator's release
// and a loss apart.
func TestBeliefCheck(t *testing.T) {
	b, s := newTestBelief(t)
	s.Extend(time.Now().Add(time.Hour), time.Hour)
	if r, err := b.Check(); err != nil || r <= 0 {
		t.Fatalf("Check while held = %v, %v; want time left and nil", r, err)
	}
	operator := fmt.Errorf("%w at an operator's request", wire.ErrReleased)
	for _, tc := range []struct {
		cause      error
		want, also error
		text       string
	}{
		{wire.ErrReleased, wire.ErrReleased, nil, "holdfast: lease released by this node"},
		{operator, wire.ErrReleased, nil, operator.Error()},
		{ErrExpired, wire.ErrLeaseLost, ErrExpired, ""},
	} {
		b, _ := newTestBelief(t)
		b.Cancel(tc.cause)
		r, err := b.Check()
		if r != 0 || !errors.Is(err, tc.want) || tc.also != nil && !errors.Is(err, tc.also) || tc.text != "" && err.Error() != tc.text {
			t.Errorf("Check after %v = %v, %v; want 0 and %v (%q)", tc.cause, r, err, tc.want, tc.text)
		}
	}
}
