package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestGroupRefusesAfterClose(t *testing.T) {
	var g Group
	ran := make(chan struct{})
	if !g.Go(func() { close(ran) }) {
		t.Fatal("Go refused before Close")
	}
	<-ran
	g.Close()
	if g.Go(func() { t.Error("ran after Close") }) {
		t.Fatal("Go accepted after Close")
	}
	g.Wait()
}

// leaderWatch is a node's record of since when no leader is known.
type leaderWatch struct {
	since time.Time
	none  bool
}

func (w *leaderWatch) options(d time.Duration) StepsOptions {
	return StepsOptions{Log: slog.New(slog.DiscardHandler), Leaderless: d,
		NoLeaderSince:   func() (time.Time, bool) { return w.since, w.none },
		NoLeaderChanged: func() <-chan struct{} { return nil }}
}

func TestStepsSkipCommittingWithoutLeader(t *testing.T) {
	w := &leaderWatch{since: time.Now().Add(-time.Hour), none: true} // lost long ago: skipped at once
	s := NewSteps(context.Background(), w.options(time.Second))
	<-s.commit.Done()
	local := false
	s.Committing("closing the session", func(context.Context) error { t.Error("ran without a leader"); return nil },
		func() { local = true })
	if !local {
		t.Error("the local step did not run in place of the skipped one")
	}
	if err := s.Done(); err != nil {
		t.Errorf("a skipped step is no failure: %v", err)
	}
}

func TestStepsKeepFailures(t *testing.T) {
	w := &leaderWatch{} // a leader is known
	s := NewSteps(context.Background(), w.options(time.Second))
	s.Committing("handing shards off", func(ctx context.Context) error {
		if ctx.Err() != nil {
			t.Errorf("commit context ended with a leader known: %v", context.Cause(ctx))
		}
		return errors.New("boom")
	}, nil)
	s.Failed("leaving gossip", nil)
	err := s.Done()
	if err == nil || !strings.Contains(err.Error(), "handing shards off: boom") {
		t.Errorf("Done = %v, want the failed step", err)
	}
}
