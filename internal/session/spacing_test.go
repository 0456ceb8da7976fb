package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestConfirmSpacingBoundsRounds: with ConfirmSpacing set, the first
// keepalive's request after a quiet spell starts its round at once, and
// those that follow within the spacing start none before it has passed
// (here an hour, so they give up with their own context and no second
// round ran); a Sync's request (verify) starts the next round at once.
func TestConfirmSpacingBoundsRounds(t *testing.T) {
	r := newLessorRig(t, 3)
	o := r.l.o
	o.ConfirmSpacing = time.Hour
	l := NewLessor(o)
	l.Activate(r.rep.f.View())
	ctx, cancel := context.WithCancel(context.Background())
	var loop sync.WaitGroup
	loop.Go(func() { l.ConfirmLoop(ctx) })
	defer func() { cancel(); loop.Wait() }()

	if err := l.verifyOn(context.Background(), l.spacedReq); err != nil {
		t.Fatalf("first round: %v", err)
	}
	// The round ends at its quorum; its other question may still be on
	// its way to the voter.
	testkit.Eventually(t, "the first round to ask both other voters", time.Minute, testkit.Holds(func() bool { return r.voters.askedCount() == 2 }))
	first := r.voters.askedCount()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			c, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer stop()
			errs <- l.verifyOn(c, l.spacedReq)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a request within the spacing: %v, want its own deadline", err)
		}
	}
	if got := r.voters.askedCount(); got != first {
		t.Fatalf("voters asked %d times, want %d: a round ran within the spacing", got, first)
	}
	if err := l.verify(context.Background()); err != nil {
		t.Fatalf("a prompt round within the spacing: %v", err)
	}
	if got := r.voters.askedCount(); got <= first {
		t.Fatal("a prompt request ran no round")
	}
}
